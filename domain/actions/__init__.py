"""The actions area (domain/areas.py)."""
