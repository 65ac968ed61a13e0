"""The health area (domain/areas.py)."""
