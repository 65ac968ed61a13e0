"""The authority area (domain/areas.py)."""
