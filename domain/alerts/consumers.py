"""The alerts of change-log consumers (contract section 3.4; docs/contract/consumer.md):
reactions of the alerts area to the consumer area's events.

`reconciliation_required:{consumer_id}` is raised on entering reconciliation
and resolved when it commits. `consumer_sequence_reset:{consumer_id}`
(Tandem's extension, "Sequence resets") is raised when a batch shows that the
producer restarted its seq (`SequenceReset`), and resolved, like the other,
when a reconciliation of that consumer commits: the way back to a cursor the
producer's log agrees with.
"""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.alerts.rules import raise_alert, resolve_alert
from tandem.domain.state import State

# The consumer alerts a reconciliation's commit resolves, in this order.
RESOLVED_BY_COMMIT = ("reconciliation_required", "consumer_sequence_reset")


def _on_reconciliation_started(state: State, event: ev.ReconciliationStarted) -> list[ev.Event]:
    assert state.last_at is not None  # a reaction always follows an input's record
    return raise_alert(
        state,
        event.cause,
        f"reconciliation_required:{event.consumer_id}",
        state.last_at,
        detail=f"{event.reconciliation_id}: {event.reason}",
        facts=ev.AlertFacts(
            reason=event.reason, consumer_id=event.consumer_id, reconciliation_id=event.reconciliation_id
        ),
    )


def _on_reconciliation_committed(state: State, event: ev.ReconciliationCommitted) -> list[ev.Event]:
    return [
        resolved
        for kind in RESOLVED_BY_COMMIT
        for resolved in resolve_alert(
            state,
            event.cause,
            f"{kind}:{event.consumer_id}",
            detail=f"{event.reconciliation_id} committed the cursor at epoch {event.epoch}, seq {event.seq}",
            facts=ev.AlertFacts(
                reason="reconciled", consumer_id=event.consumer_id, reconciliation_id=event.reconciliation_id
            ),
        )
    ]


def _on_sequence_reset(state: State, event: ev.SequenceReset) -> list[ev.Event]:
    """Raised when the condition starts; more reset batches before a commit
    (the condition going on) raise nothing."""
    assert state.last_at is not None
    return raise_alert(
        state,
        event.cause,
        f"consumer_sequence_reset:{event.consumer_id}",
        state.last_at,
        detail=(
            f"seq {event.entry_seq} carried {event.source_id} on {event.cause_key} (fingerprint "
            f"{event.fingerprint!r}), not a repeat of what the consumer read up to seq {event.read_seq} of epoch "
            f"{event.epoch}: the producer restarted its seq; skipped at the cursor {event.cursor_seq}"
        ),
        facts=ev.AlertFacts(
            reason="sequence_reset",
            consumer_id=event.consumer_id,
            entry_seq=event.entry_seq,
            read_seq=event.read_seq,
            source_id=event.source_id,
        ),
    )


DECIDERS: dict[type, object] = {}
EVOLVERS: dict[type, object] = {}
REACTIONS = {
    ev.ReconciliationStarted: _on_reconciliation_started,
    ev.ReconciliationCommitted: _on_reconciliation_committed,
    ev.SequenceReset: _on_sequence_reset,
}
