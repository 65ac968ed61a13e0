"""The alerts area (domain/areas.py)."""
