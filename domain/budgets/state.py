"""The budgets area's part of the decision state: no records of its own. What
it decides is kept on the records of the areas it limits (a grant's calls and
tokens, an action's deadline, a delivery's deferral); domain/records.py
gathers every area's."""

from __future__ import annotations

__all__: list[str] = []
