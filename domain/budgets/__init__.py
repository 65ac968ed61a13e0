"""The budgets area (domain/areas.py)."""
