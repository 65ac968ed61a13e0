"""The investigations area (domain/areas.py)."""
