"""The consumer area (domain/areas.py)."""
