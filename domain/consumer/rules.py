"""Change-log consumers (contract section 3.4): a durable cursor that moves in the same
transaction as the inbox changes it causes, a deletion watermark per epoch,
and reconciliation when history may have been lost.

Reconciliation is required when the log's epoch changed, or when something
was deleted beyond the cursor (`max_deleted_seq > seq`; interior deletions
count, so `MIN(seq) > cursor` is never the test). It issues
`{consumer_id}/r{n}`; while it is open every batch is refused. `log.reconcile`
applies the surviving facts (the repeat rules keep what was already seen),
commits the cursor to (epoch, max(retained head, the epoch's watermark)) —
within an epoch never backwards, so an empty log never resets it to 0 — and
counts a visible gap.

Entries at or below the cursor are skipped and counted. Tandem's extension
(docs/contract/consumer.md, "Sequence resets"): when one of them, at a seq
the consumer read from a batch, carries what the inbox does not hold, the
producer restarted its seq: `SequenceReset` names it, and the alerts area
raises `consumer_sequence_reset:{consumer_id}` (resolved when a
reconciliation of the consumer commits).
"""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.inbox.rules import Draft, default_cause_key, observation_events
from tandem.domain.lifecycles import CONSUMER
from tandem.domain.reasons import Rejected
from tandem.domain.records import Consumer
from tandem.domain.state import State


def _start_reconciliation(
    consumer: Consumer, seq: int, reason: str, epoch_seen: int, max_deleted_seq: int | None = None
) -> ev.ReconciliationStarted:
    return ev.ReconciliationStarted(
        cause=seq,
        consumer_id=consumer.consumer_id,
        reconciliation_id=f"{consumer.consumer_id}/r{consumer.reconciliations + 1}",
        reason=reason,
        epoch_seen=epoch_seen,
        cursor_epoch=consumer.epoch,
        cursor_seq=consumer.seq,
        max_deleted_seq=max_deleted_seq,
    )


def decide_batch(state: State, value: inp.LogBatch, seq: int) -> list[ev.Event]:
    consumer = state.consumer.by_id.get(value.consumer_id)
    events: list[ev.Event] = []
    if consumer is None:
        events.append(ev.ConsumerCreated(cause=seq, consumer_id=value.consumer_id, epoch=value.epoch))
        cursor = 0
    else:
        if not CONSUMER.allows(consumer.state, "batch"):
            raise Rejected("reconciliation_required", f"{consumer.reconciliation_id} is open: reconcile first")
        if value.epoch != consumer.epoch:
            raise Rejected(
                "reconciliation_required",
                f"the log is in epoch {value.epoch}, the cursor in {consumer.epoch}",
                consequences=[_start_reconciliation(consumer, seq, "epoch_changed", value.epoch)],
            )
        cursor = consumer.seq
    _check_sequence(value)
    draft = Draft(state)
    fresh = [entry for entry in value.entries if entry.seq > cursor]
    for entry in fresh:  # in order: the repeat rules absorb a resent entry
        events.extend(observation_events(state, draft, entry.observation, seq, value.at, "log"))
    skipped = len(value.entries) - len(fresh)
    if skipped:  # consumed before (or a producer that restarted its seq): counted, seen
        events.append(
            ev.EntriesSkipped(cause=seq, consumer_id=value.consumer_id, epoch=value.epoch, count=skipped, cursor_seq=cursor)
        )
        if consumer is not None:
            events.extend(_sequence_reset(state, consumer, value, seq))
    if fresh:
        events.append(ev.CursorMoved(cause=seq, consumer_id=value.consumer_id, epoch=value.epoch, seq=fresh[-1].seq))
    return events


def _sequence_reset(state: State, consumer: Consumer, value: inp.LogBatch, seq: int) -> list[ev.Event]:
    """Tandem's extension (docs/contract/consumer.md, "Sequence resets"): the
    skipped entries at or below the seq this consumer read from this epoch's
    batches, judged in order by the inbox's repeat and order rules (as if
    applied); the first that is neither a repeat nor older than what the
    inbox holds shows a producer that restarted its seq. A
    seq only a reconciliation's commit passed was never read: its entries are
    the gap the reconciliation counted, and are skipped as before."""
    read = consumer.read.get(value.epoch, 0)
    draft = Draft(state)  # a throwaway: the skipped entries are judged, never applied
    for entry in value.entries:
        if entry.seq > min(read, consumer.seq):
            break  # seqs strictly increase: the rest were not read
        judged = observation_events(state, draft, entry.observation, seq, value.at, "log")[0]
        if not _resent(judged):
            return [
                ev.SequenceReset(
                    cause=seq,
                    consumer_id=consumer.consumer_id,
                    epoch=value.epoch,
                    cursor_seq=consumer.seq,
                    read_seq=read,
                    entry_seq=entry.seq,
                    source_id=entry.observation.source_id,
                    cause_key=default_cause_key(entry.observation),
                    fingerprint=entry.observation.fingerprint,
                )
            ]
    return []


def _resent(judged: ev.Event) -> bool:
    """A repeat, or an older version than the inbox holds (out of order by its
    source_time): what a resend of an entry read before is judged as."""
    return type(judged) is ev.ObservationRepeated or getattr(judged, "out_of_order", None) is True


def _check_sequence(value: inp.LogBatch) -> None:
    """A batch's entries' seq strictly increase (contract v1.1), else nothing of it applies."""
    for before, after in zip(value.entries, value.entries[1:]):
        if after.seq <= before.seq:
            raise Rejected("bad_sequence", f"entry seq {after.seq} follows {before.seq}: a batch's seq strictly increase")


def decide_pruned(state: State, value: inp.LogPruned, seq: int) -> list[ev.Event]:
    consumer = state.consumer.by_id.get(value.consumer_id)
    events: list[ev.Event] = []
    if consumer is None:
        events.append(ev.ConsumerCreated(cause=seq, consumer_id=value.consumer_id, epoch=value.epoch))
        consumer = Consumer(value.consumer_id, value.epoch)
    watermark = max(consumer.watermark(value.epoch), value.max_deleted_seq)
    if watermark > consumer.watermark(value.epoch):
        events.append(
            ev.WatermarkRaised(cause=seq, consumer_id=value.consumer_id, epoch=value.epoch, max_deleted_seq=watermark)
        )
    if CONSUMER.allows(consumer.state, "require_reconciliation"):  # re-entering issues nothing
        if value.epoch != consumer.epoch:
            events.append(_start_reconciliation(consumer, seq, "epoch_changed", value.epoch, watermark))
        elif watermark > consumer.seq:
            events.append(_start_reconciliation(consumer, seq, "history_deleted", value.epoch, watermark))
    return events


def decide_reconcile(state: State, value: inp.LogReconcile, seq: int) -> list[ev.Event]:
    consumer = state.consumer.by_id.get(value.consumer_id)
    if (
        consumer is None
        or not CONSUMER.allows(consumer.state, "reconcile")
        or consumer.reconciliation_id != value.reconciliation_id
    ):
        open_id = consumer.reconciliation_id if consumer is not None else None
        raise Rejected("stale_reconciliation", f"{value.reconciliation_id!r} is not the open reconciliation ({open_id})")
    draft = Draft(state)
    events: list[ev.Event] = [
        event for fact in value.facts for event in observation_events(state, draft, fact, seq, value.at, "reconcile")
    ]
    # Within an epoch the cursor never goes backwards, also on coming back to it.
    watermark = consumer.watermark(value.epoch)
    head = max(value.retained_head, watermark, consumer.reached.get(value.epoch, 0))
    if value.epoch == consumer.epoch:
        head = max(head, consumer.seq)
    events.append(
        ev.ReconciliationCommitted(
            cause=seq,
            consumer_id=consumer.consumer_id,
            reconciliation_id=value.reconciliation_id,
            epoch=value.epoch,
            seq=head,
            gaps=consumer.gaps + 1,
            retained_head=value.retained_head,
            watermark=watermark,
        )
    )
    return events


# ----------------------------------------------------------------- evolvers


def _consumer_created(state: State, event: ev.ConsumerCreated) -> None:
    state.consumer.by_id[event.consumer_id] = Consumer(event.consumer_id, event.epoch, state=CONSUMER.after[ev.ConsumerCreated])


def _cursor_moved(state: State, event: ev.CursorMoved) -> None:
    consumer = state.consumer.by_id[event.consumer_id]
    consumer.epoch = event.epoch
    consumer.seq = event.seq
    consumer.reached[event.epoch] = max(consumer.reached.get(event.epoch, 0), event.seq)
    consumer.read[event.epoch] = max(consumer.read.get(event.epoch, 0), event.seq)


def _entries_skipped(state: State, event: ev.EntriesSkipped) -> None:
    state.consumer.by_id[event.consumer_id].skipped += event.count


def _sequence_reset_seen(state: State, event: ev.SequenceReset) -> None:
    state.consumer.by_id[event.consumer_id].resets += 1


def _watermark_raised(state: State, event: ev.WatermarkRaised) -> None:
    state.consumer.by_id[event.consumer_id].watermarks[event.epoch] = event.max_deleted_seq


def _reconciliation_started(state: State, event: ev.ReconciliationStarted) -> None:
    consumer = state.consumer.by_id[event.consumer_id]
    consumer.state = CONSUMER.after[ev.ReconciliationStarted]
    consumer.reconciliation_id = event.reconciliation_id
    consumer.reconciliations += 1


def _reconciliation_committed(state: State, event: ev.ReconciliationCommitted) -> None:
    consumer = state.consumer.by_id[event.consumer_id]
    consumer.state = CONSUMER.after[ev.ReconciliationCommitted]
    consumer.reconciliation_id = None
    consumer.epoch = event.epoch
    consumer.seq = event.seq
    consumer.reached[event.epoch] = max(consumer.reached.get(event.epoch, 0), event.seq)
    consumer.gaps = event.gaps


DECIDERS = {
    inp.LogBatch: decide_batch,
    inp.LogPruned: decide_pruned,
    inp.LogReconcile: decide_reconcile,
}
EVOLVERS = {
    ev.ConsumerCreated: _consumer_created,
    ev.CursorMoved: _cursor_moved,
    ev.EntriesSkipped: _entries_skipped,
    ev.SequenceReset: _sequence_reset_seen,
    ev.WatermarkRaised: _watermark_raised,
    ev.ReconciliationStarted: _reconciliation_started,
    ev.ReconciliationCommitted: _reconciliation_committed,
}
REACTIONS: dict[type, Any] = {}
