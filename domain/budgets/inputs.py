"""The input kinds of the budgets area: none (its events are the engine's own, decided
by the pass and the time rules); domain/inputs.py assembles every area's kinds."""

from __future__ import annotations

__all__: list[str] = []
