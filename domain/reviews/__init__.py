"""The reviews area (domain/areas.py)."""
