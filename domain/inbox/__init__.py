"""The inbox area (domain/areas.py)."""
