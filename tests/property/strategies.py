"""Hypothesis strategies: random, WELL-FORMED input traces for the engine.

The input generators and `traces()` live in `replay/proving/generators/` (the
public fuzzing API, shared with the stateful fuzzer); they are re-exported here.
`traces()` draws a list of input dicts (trace lines, as spec/TRACE.md section
1 writes them): every dict decodes with `domain.inputs.decode_input` and `at`
never goes backwards, so nothing is a schema error; what the domain does with
them (apply or reject) is the engine's business.

`consumer_traces()` (here) is the change-log-heavy variant: a model of the
source's log (epochs, sparse seqs, pruning) feeds batches, prunings and
reconciliations.

The shadow engine only steers the choices; the tests apply the returned list
to fresh engines of their own.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

from hypothesis import strategies as st

from tandem.replay.proving.generators.kinds import KINDS, traces  # noqa: F401  (re-exported for the property tests)
from tandem.replay.proving.generators.sources import CONSUMERS, observation_fields, triage_classify  # noqa: F401
from tandem.replay.proving.generators.universe import T0, Builder, Draw, decode, often, preamble  # noqa: F401

# ===================================================== change-log-heavy traces


class SourceLog:
    """What a change-log source holds, per epoch: the entries it ever wrote
    (sparse seqs: "gaps" in numbering happen), those still retained, and
    the greatest seq it deleted (interior deletions included). The source
    announces every deletion as it makes it (`log.pruned`)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.head: dict[int, int] = {}
        self.retained: dict[int, dict[int, dict[str, Any]]] = {}
        self.ever: dict[int, set[int]] = {}
        self.max_deleted: dict[int, int] = {}

    def append(self, draw: Draw, count: int) -> None:
        epoch = self.epoch
        for _ in range(count):
            seq = self.head.get(epoch, 0) + draw(st.sampled_from([1, 1, 1, 1, 2, 3]))
            self.head[epoch] = seq
            self.retained.setdefault(epoch, {})[seq] = observation_fields(draw)
            self.ever.setdefault(epoch, set()).add(seq)

    def retained_seqs(self, epoch: int | None = None) -> list[int]:
        return sorted(self.retained.get(self.epoch if epoch is None else epoch, {}))

    def delete(self, seqs: list[int]) -> int:
        entries = self.retained.get(self.epoch, {})
        for seq in seqs:
            entries.pop(seq, None)
        if seqs:
            self.max_deleted[self.epoch] = max(self.max_deleted.get(self.epoch, 0), *seqs)
        return self.max_deleted.get(self.epoch, 0)


class ConsumerBuilder(Builder):
    def __init__(self, rollback: bool) -> None:
        super().__init__()
        self.rollback = rollback
        self.logs = {consumer_id: SourceLog(1) for consumer_id in CONSUMERS}
        self.known: list[dict[str, dict[int, frozenset[int]]]] = []  # per line: seqs ever written

    def add(self, line: dict[str, Any]) -> None:
        self.known.append(
            {c: {e: frozenset(seqs) for e, seqs in log.ever.items()} for c, log in self.logs.items()}
        )
        super().add(line)


def _consumer_id(draw: Draw) -> str:
    return CONSUMERS[0] if often(draw, 8) else CONSUMERS[1]


def _cursor(b: Builder, consumer_id: str, epoch: int) -> int:
    consumer = b.state.consumer.by_id.get(consumer_id)
    return consumer.seq if consumer is not None and consumer.epoch == epoch else 0


def cl_batch(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    log.append(draw, draw(st.integers(0, 3)))
    mode = draw(st.integers(0, 9))
    epoch = log.epoch
    if mode == 0:  # a delivery from another epoch (a stale one, or a future one)
        epoch = draw(st.sampled_from([e for e in (1, 2, 3, 4) if e != log.epoch]))
    cursor = _cursor(b, consumer_id, epoch)
    below = draw(st.sampled_from([0, 0, 0, 1, 3]))  # sometimes re-deliver at/below the cursor
    seqs = [seq for seq in log.retained_seqs(epoch) if seq > cursor - below][: draw(st.integers(0, 4))]
    entries = [{"seq": seq, "observation": log.retained[epoch][seq]} for seq in seqs]
    if len(entries) > 1 and draw(st.integers(0, 14)) == 0:
        entries.reverse()  # out of order: the running cursor skips the lower ones
    return b.line("log.batch", "source", consumer_id=consumer_id, epoch=epoch, entries=entries)


def cl_pruned(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    seqs = log.retained_seqs()
    mode = draw(st.integers(0, 9))
    if mode == 0 and log.max_deleted:  # an old notice again (a smaller or equal watermark)
        epoch = draw(st.sampled_from(sorted(log.max_deleted)))
        return b.line("log.pruned", "source", consumer_id=consumer_id, epoch=epoch,
                      max_deleted_seq=draw(st.integers(0, log.max_deleted[epoch])))  # fmt: skip
    if seqs and mode <= 6:  # a prefix
        cut = draw(st.integers(0, len(seqs) - 1))
        deleted = seqs[: cut + 1]
    elif len(seqs) > 2:  # an interior range
        first = draw(st.integers(1, len(seqs) - 2))
        deleted = seqs[first : first + draw(st.integers(1, len(seqs) - 1 - first))]
    else:
        deleted = []
    watermark = log.delete(deleted)
    return b.line("log.pruned", "source", consumer_id=consumer_id, epoch=log.epoch, max_deleted_seq=watermark)


def cl_reconcile(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    consumer = b.state.consumer.by_id.get(consumer_id)
    issued = consumer.reconciliations if consumer is not None else 0
    open_id = consumer.reconciliation_id if consumer is not None else None
    if open_id is not None and often(draw, 8):
        reconciliation_id = open_id
    else:  # a stale one: already committed, never issued, or another consumer's
        reconciliation_id = draw(st.sampled_from(
            [f"{consumer_id}/r{n}" for n in range(1, issued + 2)] + [f"{CONSUMERS[1 - CONSUMERS.index(consumer_id)]}/r1"]
        ))  # fmt: skip
    seqs = log.retained_seqs()
    head = seqs[-1] if seqs else 0
    if head and draw(st.integers(0, 9)) == 0:
        head = draw(st.integers(0, head))  # a lagging view of the log
    cursor = _cursor(b, consumer_id, log.epoch)
    chosen = [seq for seq in seqs if seq > cursor] if often(draw, 7) else seqs
    facts = [log.retained[log.epoch][seq] for seq in chosen[:5]]
    if often(draw, 2):
        facts.append(observation_fields(draw))  # an observation the log no longer orders
    return b.line("log.reconcile", "source", consumer_id=consumer_id, reconciliation_id=reconciliation_id,
                  epoch=log.epoch, retained_head=head, facts=facts)  # fmt: skip


def cl_epoch(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> None:
    """The source's log moves to a new epoch (no input): forward, or — with
    `rollback` — sometimes back to an earlier one it still holds."""
    log = b.logs[consumer_id]
    earlier = [e for e in log.ever if e < log.epoch]
    if b.rollback and earlier and often(draw, 4):
        log.epoch = draw(st.sampled_from(earlier))
        if often(draw, 5):  # restored from a backup: the tail written since is gone
            seqs = log.retained_seqs()
            cut = draw(st.sampled_from([0, 0, *seqs[: len(seqs) // 2]]))
            log.retained[log.epoch] = {seq: o for seq, o in log.retained.get(log.epoch, {}).items() if seq <= cut}
            log.head[log.epoch] = cut
            log.ever[log.epoch] = {seq for seq in log.ever.get(log.epoch, ()) if seq <= cut}
    else:
        log.epoch = max([log.epoch, *log.ever]) + 1
        if often(draw, 3):  # a new epoch may number on from an offset
            log.head[log.epoch] = draw(st.sampled_from([0, 5, 20]))


def cl_observe(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    line = b.line("observe", "source")
    line.update(observation_fields(draw))
    return line


def cl_triage(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    return triage_classify(draw, b)


CONSUMER_KINDS: dict[str, tuple[Callable[..., Any], int]] = {
    "log.batch": (cl_batch, 8),
    "log.pruned": (cl_pruned, 3),
    "log.reconcile": (cl_reconcile, 4),
    "epoch": (cl_epoch, 1),
    "observe": (cl_observe, 2),
    "triage.classify": (cl_triage, 2),
}
_CONSUMER_WEIGHTED = [name for name, (_, weight) in CONSUMER_KINDS.items() for _ in range(weight)]
_ROLLBACK_WEIGHTED = _CONSUMER_WEIGHTED + ["epoch"] * 3  # epochs change (and come back) more often


@st.composite
def consumer_traces(draw: Draw, max_steps: int = 40, rollback: bool = False) -> tuple[list[dict[str, Any]], list[Any]]:
    """(lines, known): the preamble then up to `max_steps` change-log inputs;
    `known[i]` is, for each consumer and epoch, every seq its source had
    written when line i was sent (deleted ones included)."""
    b = ConsumerBuilder(rollback)
    for line in preamble():
        b.add(line)
    for _ in range(draw(st.integers(0, max_steps))):
        if b.crashed:
            break
        b.now += datetime.timedelta(seconds=draw(st.sampled_from([0, 1, 1, 5, 30])))
        kind = draw(st.sampled_from(_ROLLBACK_WEIGHTED if rollback else _CONSUMER_WEIGHTED))
        consumer_id = _consumer_id(draw)
        consumer = b.state.consumer.by_id.get(consumer_id)
        reconciling = consumer is not None and consumer.reconciliation_id is not None
        if kind == "log.reconcile" and not reconciling and often(draw, 7):
            kind = "log.batch"  # mostly reconcile what is open; a stale one now and then
        elif kind == "log.batch" and reconciling and often(draw, 4):
            kind = "log.reconcile"
        line = CONSUMER_KINDS[kind][0](draw, b, consumer_id)
        if line is not None:
            b.add(line)
    return b.lines, b.known
