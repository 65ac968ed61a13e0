"""The delivery area (domain/areas.py)."""
