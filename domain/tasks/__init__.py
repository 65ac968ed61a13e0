"""The tasks area (domain/areas.py)."""
