"""The tools area (domain/areas.py)."""
