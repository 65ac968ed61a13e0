"""The conversation area (domain/areas.py)."""
