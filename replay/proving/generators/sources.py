"""Generators of what sources say (contract section 3.4): observations, triage of the
updates they make, and a change log's batches, prunings and reconciliations."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tandem.replay.proving.generators.universe import CAUSES, Builder, Draw, often, revision_near

SOURCES = ("ci-1", "ci-2", "c-1", "c-2")  # "c-*" are comment sources
SCOPES = ("https://scm/pr/1", "https://scm/pr/2")
FINGERPRINTS = ("f1", "f2", "f3")
SOURCE_VERSIONS = tuple(f"v{n}" for n in range(1, 7))
CONSUMERS = ("scm", "ci-log")
STATUSES = ("failure", "success")
COMMITS = ("sha1", "sha2")
DISPOSITIONS = ("routine", "actionable", "urgent", "needs_input")
BATCHES = ("b1", "b2")  # review batches (contract v1.2 section 7.1)
ALIASES = ("scm-1",)  # an alias never observed itself (the SOURCES may be aliases too)


def observation_fields(draw: Draw, causes: tuple[str, ...] = (), p_cause: int = 6) -> dict[str, Any]:
    """The observe fields (contract section 3.4) over a small universe, so that repeats
    (same version, same latest fingerprint) happen often."""
    source = draw(st.sampled_from(SOURCES))
    fields: dict[str, Any] = {
        "source_id": source,
        "kind": "comment" if source.startswith("c-") else "ci",
        "scope": draw(st.sampled_from(SCOPES)),
        "fingerprint": draw(st.sampled_from(FINGERPRINTS)),
        "complete": often(draw, 8),
    }
    if causes and often(draw, p_cause):
        fields["cause_key"] = draw(st.sampled_from(causes))
    if often(draw, 2):  # what the source rule reads (contract v1.2 section 2)
        fields["status"] = draw(st.sampled_from(STATUSES))
    if often(draw, 2):
        fields["commit_sha"] = draw(st.sampled_from(COMMITS))
    if often(draw, 5):
        fields["source_version"] = draw(st.sampled_from(SOURCE_VERSIONS))
    if draw(st.integers(0, 14)) == 0:
        fields["deleted"] = True
    origin = draw(st.integers(0, 14))
    if origin == 0:
        fields["origin_conversation"] = "bg"  # a background's own activity
    elif origin == 1:
        fields["origin_conversation"] = "fg"
    if often(draw, 3):
        fields["text"] = draw(st.sampled_from(["build failed", "all green", "nit: rename"]))
    if often(draw, 2):
        fields["tokens"] = draw(st.sampled_from([0, 12, 300]))
    if often(draw, 3):  # contract v1.2 section 7.1 (last: the draws before it are as they were)
        fields["batch_id"] = draw(st.sampled_from(BATCHES))
    return fields


def review_observation(draw: Draw, b: Builder) -> dict[str, Any]:
    """An observation of one of the causes actions answer, in a review batch
    (the machine's `reviews` rule: batches that join causes actions are for)."""
    line = b.line("observe", "source")
    line.update(observation_fields(draw, CAUSES, p_cause=10))
    line["batch_id"] = draw(st.sampled_from(BATCHES))
    return line


def late_join(draw: Draw, b: Builder) -> dict[str, Any]:
    """Contract v1.2 section 7.3: a new observation naming a batch of a cause
    that has a live fix and is in no batch yet, mostly of a batch whose causes
    already have one (the machine's `reviews` rule: fixes that started before
    their causes were known to be one batch). A review observation while no
    such cause exists."""
    state = b.state
    live = {a.cause_key for a in state.actions.by_id.values() if not a.terminal and a.state != "cancel_requested"}
    loose = sorted(cause for cause in live if cause not in state.reviews.batch_of)
    if not loose:
        return review_observation(draw, b)
    held = sorted({state.reviews.batch_of[cause] for cause in live if cause in state.reviews.batch_of})
    line = b.line("observe", "source")
    line.update(observation_fields(draw, CAUSES))
    for field in ("origin_conversation", "source_version", "deleted"):
        line.pop(field, None)  # a revision of its own, in order: it joins
    line.update(
        cause_key=draw(st.sampled_from(loose)),
        fingerprint=f"j{len(b.lines) + 1}",  # never the one before: a new revision
        batch_id=draw(st.sampled_from(held)) if held and often(draw, 8) else draw(st.sampled_from(BATCHES)),
    )
    return line


def source_alias(draw: Draw, b: Builder) -> dict[str, Any]:
    """Contract v1.2 section 7.2: mostly of an observed source (an alias of
    an alias, of itself, or of another's alias sometimes), from the source or the daemon."""
    observed = sorted(b.state.inbox.sources)
    alias_of = draw(st.sampled_from(observed)) if observed and often(draw, 8) else draw(st.sampled_from(SOURCES))
    source_id = draw(st.sampled_from(SOURCES + ALIASES))
    actor = draw(st.sampled_from(["source", "daemon"]))
    return b.line("source.alias", actor, source_id=source_id, alias_of=alias_of)


def observe(draw: Draw, b: Builder) -> dict[str, Any]:
    line = b.line("observe", "source")  # (not **fields: an observation has a `kind` field)
    line.update(observation_fields(draw, CAUSES))
    return line


def triage_classify(draw: Draw, b: Builder, conversation: str = "bg") -> dict[str, Any]:
    updates = b.state.inbox.updates
    if updates and often(draw):
        cause_key = draw(st.sampled_from(sorted(updates)))
        revision = revision_near(draw, updates[cause_key].revision)
    else:
        cause_key, revision = draw(st.sampled_from(CAUSES)), 1
    return b.line(
        "triage.classify",
        "background",
        conversation_id=conversation,
        generation=b.generation() if often(draw) else b.generation() - 1,
        cause_key=cause_key,
        update_revision=revision,
        disposition=draw(st.sampled_from(DISPOSITIONS)),
        action_priority=draw(st.integers(0, 3)),
        notification_priority=draw(st.integers(0, 3)),
    )


def urgent_triage(draw: Draw, b: Builder) -> dict[str, Any]:
    """An update triaged urgent by the bound background, mostly one still
    untriaged at its current revision (contract v1.2 section 3.7: an urgent
    update reaching its foreground, inside the wake interval or not)."""
    updates = b.state.inbox.updates
    untriaged = sorted(key for key, update in updates.items() if update.triage_state == "untriaged")
    if untriaged and often(draw, 8):
        cause_key = draw(st.sampled_from(untriaged))
    elif updates:
        cause_key = draw(st.sampled_from(sorted(updates)))
    else:
        cause_key = draw(st.sampled_from(CAUSES))
    update = updates.get(cause_key)
    return b.line(
        "triage.classify",
        "background",
        conversation_id="bg",
        generation=b.generation(),
        cause_key=cause_key,
        update_revision=update.revision if update is not None else 1,
        disposition="urgent",
        action_priority=1,
        notification_priority=draw(st.integers(0, 3)),
    )


def _consumer(b: Builder, consumer_id: str):
    return b.state.consumer.by_id.get(consumer_id)


def log_batch(draw: Draw, b: Builder) -> dict[str, Any]:
    """A batch around the cursor (some entries at or below it), in its epoch
    mostly, in another one sometimes."""
    consumer = _consumer(b, "scm")
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None and often(draw, 8) else draw(st.integers(1, 2))
    start = max(cursor + 1 - draw(st.sampled_from([0, 0, 0, 1, 2])), 1)
    seqs = sorted(set(draw(st.lists(st.integers(start, start + 5), max_size=3))))
    entries = [{"seq": seq, "observation": observation_fields(draw, CAUSES)} for seq in seqs]
    return b.line("log.batch", "source", consumer_id="scm", epoch=epoch, entries=entries)


def log_pruned(draw: Draw, b: Builder) -> dict[str, Any]:
    consumer = _consumer(b, "scm")
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None and often(draw, 8) else draw(st.integers(1, 2))
    deleted = max(cursor + draw(st.sampled_from([-2, -1, 0, 0, 1, 3])), 0)
    return b.line("log.pruned", "source", consumer_id="scm", epoch=epoch, max_deleted_seq=deleted)


def log_reconcile(draw: Draw, b: Builder) -> dict[str, Any]:
    consumer = _consumer(b, "scm")
    open_id = consumer.reconciliation_id if consumer is not None else None
    if open_id is not None and often(draw, 8):
        reconciliation_id = open_id
    else:
        issued = consumer.reconciliations if consumer is not None else 0
        reconciliation_id = f"scm/r{draw(st.integers(max(issued - 1, 1), issued + 1))}"
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None else 1
    facts = [observation_fields(draw, CAUSES) for _ in range(draw(st.integers(0, 2)))]
    return b.line(
        "log.reconcile",
        "source",
        consumer_id="scm",
        reconciliation_id=reconciliation_id,
        epoch=epoch if often(draw, 7) else draw(st.integers(1, 2)),
        retained_head=max(cursor + draw(st.sampled_from([-3, 0, 0, 2, 4])), 0),
        facts=facts,
    )


def cause_revised(draw: Draw, b: Builder) -> dict[str, Any]:
    """An observation that revises the cause of a live action answering a
    source revision (contract v1.2 section 2.2: the source rule's race), with
    a fingerprint its source has not reported last, so it is news: the same
    status again, the cause passing (moot for some) or on another commit. A
    plain observation while no such action lives."""
    live = sorted({a.cause_key for a in b.state.actions.by_id.values() if a.source_revision is not None and not a.terminal})
    if not live:
        return observe(draw, b)
    line = b.line("observe", "source")
    source = draw(st.sampled_from(SOURCES[:2]))
    line.update(
        source_id=source,
        kind="ci",
        scope=draw(st.sampled_from(SCOPES)),
        cause_key=draw(st.sampled_from(live)),
        fingerprint=f"r{len(b.lines) + 1}",  # never the one before: a new revision
        complete=often(draw, 8),
    )
    if often(draw, 6):
        line["status"] = draw(st.sampled_from(STATUSES))
    if often(draw, 5):
        line["commit_sha"] = draw(st.sampled_from(COMMITS))
    return line
