"""Change-log consumers (docs/contract/consumer.md): why a consumer's cursor
is where it is: each batch that moved it or had entries skipped, the
sequence resets those skipped entries showed (Tandem's extension), the
watermarks its log announced, and each reconciliation, opened and committed;
every step with its input."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import CONSUMER
from tandem.replay.explain.chain import Chain, Rendered
from tandem.replay.explain.log import Entry
from tandem.replay.explain.model import Fact


class Consumer(Chain):
    kind, key, lifecycle = "consumer", "consumer", CONSUMER

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.batches: set[int] = set()  # the inputs (seq) of the batches that moved the cursor or skipped entries
        self.epoch, self.seq = 0, 0
        self.skipped = self.gaps = self.resets = self.reconciliations = 0
        self.open_id: str | None = None
        self.reconciliation_ids: list[str] = []

    def _batch(self, entry: Entry) -> None:
        if entry[2] is not None:
            self.batches.add(entry[2].seq)

    def created(self, entry: Entry, event: ev.ConsumerCreated) -> Rendered:
        self.epoch = event.epoch
        return f"created by its first log input at epoch {event.epoch}, seq 0, watermark 0", []

    def moved(self, entry: Entry, event: ev.CursorMoved) -> Rendered:
        self._batch(entry)
        self.epoch, self.seq = event.epoch, event.seq
        return f"batch {len(self.batches)} applied its entries above the cursor: cursor at epoch {event.epoch}, seq {event.seq}", []

    def skipped_entries(self, entry: Entry, event: ev.EntriesSkipped) -> Rendered:
        self._batch(entry)
        self.skipped += event.count
        summary = (
            f"batch {len(self.batches)}: {event.count} entr{'y' if event.count == 1 else 'ies'} at or below "
            f"the cursor {event.cursor_seq} skipped (skipped {self.skipped} in all)"
        )
        return summary, [Fact(name="cursor_seq", text=f"the cursor was at seq {event.cursor_seq}", value=event.cursor_seq)]

    def reset(self, entry: Entry, event: ev.SequenceReset) -> Rendered:
        self.resets += 1
        summary = (
            f"sequence reset: seq {event.entry_seq} carried {event.source_id} on {event.cause_key} "
            f"(fingerprint {event.fingerprint!r}), not a repeat of what it read up to seq {event.read_seq} "
            f"of epoch {event.epoch}: the producer restarted its seq"
        )
        facts = [
            Fact(name="read_seq", text=f"read up to seq {event.read_seq} from batches", value=event.read_seq),
            Fact(name="entry_seq", text=f"the first entry no resend: seq {event.entry_seq}", value=event.entry_seq),
        ]
        return summary, facts

    def watermark(self, entry: Entry, event: ev.WatermarkRaised) -> Rendered:
        return f"watermark of epoch {event.epoch} raised to max_deleted_seq {event.max_deleted_seq}", []

    def started(self, entry: Entry, event: ev.ReconciliationStarted) -> Rendered:
        self.reconciliations += 1
        self.open_id = event.reconciliation_id
        self.reconciliation_ids.append(event.reconciliation_id)
        return f"reconciliation {event.reconciliation_id} opened ({event.reason}): every batch refused until it commits", []

    def committed(self, entry: Entry, event: ev.ReconciliationCommitted) -> Rendered:
        self.open_id = None
        self.epoch, self.seq, self.gaps = event.epoch, event.seq, event.gaps
        return f"reconciliation {event.reconciliation_id} committed: cursor at epoch {event.epoch}, seq {event.seq}; gaps {event.gaps}", []

    renderers = {
        ev.ConsumerCreated: created,
        ev.CursorMoved: moved,
        ev.EntriesSkipped: skipped_entries,
        ev.SequenceReset: reset,
        ev.WatermarkRaised: watermark,
        ev.ReconciliationStarted: started,
        ev.ReconciliationCommitted: committed,
    }

    def summary(self) -> str:
        return (
            f"consumer {self.identifier}: cursor at epoch {self.epoch}, seq {self.seq}; {len(self.batches)} batch(es), "
            f"skipped {self.skipped}, gaps {self.gaps}, resets {self.resets}, reconciliations {self.reconciliations}"
        )

    waits = {"reconciliation_required": ("log.reconcile", "every batch is refused until log.reconcile names {c.open_id}")}

    def related(self) -> list[str]:
        alerts = [f"alert reconciliation_required:{self.identifier}"] if self.reconciliations else []
        if self.resets:
            alerts.append(f"alert consumer_sequence_reset:{self.identifier}")
        return [*alerts, *(f"reconciliation {r}" for r in self.reconciliation_ids)]
