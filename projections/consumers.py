"""The `consumers` view: each change-log consumer's cursor, watermark, state, gaps
and the entries it skipped (at or below its cursor)."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import CONSUMER
from tandem.projections.base import View, sorted_rows


class ConsumersView(View):
    name = "consumers"
    key = "consumer_id"  # each handler returns the consumer it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.watermarks: dict[tuple[str, int], int] = {}

    def _created(self, event: ev.ConsumerCreated) -> str:
        self.rows[event.consumer_id] = {
            "consumer_id": event.consumer_id,
            "epoch": event.epoch,
            "seq": 0,
            "max_deleted_seq": 0,
            "state": CONSUMER.after[ev.ConsumerCreated],
            "gaps": 0,
            "skipped": 0,
        }
        return event.consumer_id

    def _moved(self, event: ev.CursorMoved) -> str:
        row = self.rows[event.consumer_id]
        row.update(epoch=event.epoch, seq=event.seq)
        row["max_deleted_seq"] = self.watermarks.get((event.consumer_id, event.epoch), 0)
        return event.consumer_id

    def _skipped(self, event: ev.EntriesSkipped) -> str:
        self.rows[event.consumer_id]["skipped"] += event.count
        return event.consumer_id

    def _watermark(self, event: ev.WatermarkRaised) -> str:
        self.watermarks[(event.consumer_id, event.epoch)] = event.max_deleted_seq
        row = self.rows[event.consumer_id]
        if row["epoch"] == event.epoch:
            row["max_deleted_seq"] = event.max_deleted_seq
        return event.consumer_id

    def _started(self, event: ev.ReconciliationStarted) -> str:
        self.rows[event.consumer_id]["state"] = CONSUMER.after[ev.ReconciliationStarted]
        return event.consumer_id

    def _committed(self, event: ev.ReconciliationCommitted) -> str:
        row = self.rows[event.consumer_id]
        row.update(epoch=event.epoch, seq=event.seq, state=CONSUMER.after[ev.ReconciliationCommitted], gaps=event.gaps)
        row["max_deleted_seq"] = self.watermarks.get((event.consumer_id, event.epoch), 0)
        return event.consumer_id

    handlers = {
        ev.ConsumerCreated: _created,
        ev.CursorMoved: _moved,
        ev.EntriesSkipped: _skipped,
        ev.WatermarkRaised: _watermark,
        ev.ReconciliationStarted: _started,
        ev.ReconciliationCommitted: _committed,
    }

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        return dict(row)

    def render(self) -> list[dict[str, Any]]:
        return [dict(row) for row in sorted_rows(self.rows)]
