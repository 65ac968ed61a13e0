"""A conversation's deliveries and turns."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import DELIVERY, TURN
from tandem.domain.lookups import numbered_owner
from tandem.replay.explain.chain import Chain, Rendered, Renderer, said
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Entry, Resolver, of_type, source
from tandem.replay.explain.model import Fact, Waiting

# The rules of the foreground pass (docs/contract/conversation.md, "The foreground pass", the same numbers).
_RULES = {
    "human_turn": "contract section 5.3 rule 3: idle with a human message queued: a human turn",
    "wake": "contract section 5.3 rule 4: idle, something deliverable, no * pause: one coalesced wake",
    "steer": "contract section 5.3 rule 2: running with steer: true: urgent updates steered into the turn",
    "reseed": "contract section 5.3 epochs: a context reset's bounded reseed of the control state",
    "background_reseed": (
        "contract v1.2 section 5.3: a background's reset with a checkpoint: its bounded reseed (required: its "
        "foreground's control state, its unresolved investigations, the checkpoint; optional: untriaged updates)"
    ),
}
_TURN_RULES = {
    "human_turn": "contract section 5.3 rule 3 (a human message queued)",
    "wake": "contract section 5.3 rule 4 (a coalesced wake)",
}
_VERDICTS = {
    "included": "included",
    "does_not_fit": "skipped: does not fit",
    "over_wake_batch_max": "left: the wake was full (wake_batch_max)",
}


def delivery_summary(event: ev.DeliveryCreated) -> str:
    what = []
    if event.messages:
        what.append(f"messages [{', '.join(event.messages)}]")
    if event.included:
        what.append("updates [" + ", ".join(f"{cause_key} r{revision}" for cause_key, revision in event.included) + "]")
    turn = f" of turn {event.turn_id}" if event.turn_id else ""
    return f"{event.kind} delivery {event.delivery_id}{turn}, epoch {event.epoch}, {event.tokens} tokens: " + (
        "; ".join(what) or "nothing but its control state"
    )


def _candidate_fact(resolver: Resolver, candidate: ev.CandidateUpdate, position: int) -> Fact:
    key, revision = ("update", candidate.cause_key), candidate.revision
    triaged = resolver.source(key, position, lambda e: type(e) is ev.UpdateTriaged and e.revision == revision)
    priority = candidate.notification_priority
    ranked = f", notification_priority {priority}" if priority is not None else ""
    optional = " (routine, optional)" if candidate.optional else ""
    verdict = _VERDICTS.get(candidate.verdict, candidate.verdict)
    text = (
        f"{candidate.cause_key} revision {revision} ({candidate.disposition or 'untriaged'}{ranked}, {candidate.tokens} tokens)"
        f"{optional}: {verdict}"
    )
    return Fact(name="candidate", text=text, value=msgspec.to_builtins(candidate), source=triaged)


def _checkpoint_fact(resolver: Resolver, checkpoint_id: str, position: int) -> Fact:
    """The checkpoint a background reseed carries, with the input that wrote it (contract v1.2 section 10)."""
    written = resolver.find(("checkpoint", checkpoint_id), position, of_type(ev.BackgroundCheckpointed))
    event = written[1] if written is not None else None
    if not isinstance(event, ev.BackgroundCheckpointed):
        return Fact(name="checkpoint", text=f"checkpoint {checkpoint_id}", value=checkpoint_id)
    text = (
        f"checkpoint {checkpoint_id} (epoch {event.epoch}, intent revision {event.intent_revision}, sync cursor "
        f"{event.sync_cursor}, investigations [{', '.join(event.investigations)}], evidence "
        f"[{', '.join(event.evidence_refs)}], {event.tokens} tokens)"
    )
    value = {"checkpoint_id": checkpoint_id, "sync_cursor": event.sync_cursor, "investigations": list(event.investigations),
             "evidence_refs": list(event.evidence_refs), "tokens": event.tokens}  # fmt: skip
    return Fact(name="checkpoint", text=text, value=value, source=source(written))


def _recovery_facts(resolver: Resolver, conversation_id: str, position: int) -> list[Fact]:
    """A background reseed made once its background left context recovery
    (contract v1.2 section 5.3): each figure the pass recorded since the
    epoch's reset, and the one that fit (a reset's own exit records none)."""
    episode: list[Entry] = []
    for entry in reversed(resolver.entries(("conversation", conversation_id))):
        if entry[0] > position:
            continue
        if type(entry[1]) is ev.ContextReset:
            break
        if type(entry[1]) is ev.RecoveryChanged and entry[1].needed is not None:
            episode.append(entry)
    facts: list[Fact] = []
    for entry in reversed(episode):
        changed: ev.RecoveryChanged = entry[1]
        value = {"recovery": changed.recovery, "needed": changed.needed, "room": changed.room}
        if changed.recovery is None:
            text = f"left context recovery: the required part, costed again, is {changed.needed} tokens <= room {changed.room}"
        else:
            text = (
                f"context recovery: the required part {changed.needed} tokens > room {changed.room}; "
                f"only background.checkpoint and investigation.close admitted"
            )
        facts.append(Fact(name="recovery", text=text, value=value, source=source(entry)))
    return facts


def delivery_created(resolver: Resolver, entry: Entry, event: ev.DeliveryCreated) -> Rendered:
    """A delivery: the rule that made it, its budget, what it holds, the candidates it ranked."""
    facts: list[Fact] = []
    if event.rule:
        facts.append(Fact(name="rule", text=_RULES.get(event.rule, event.rule), value=event.rule))
    budget = event.budget
    if budget is not None:
        text = (
            f"budget: context {budget.context_tokens} + tokens {event.tokens} + reserve {budget.reserve} "
            f"<= limit {budget.context_limit} (room {budget.room}: messages {budget.message_tokens}, "
            f"control {budget.control_tokens}, updates {budget.update_tokens})"
        )
        facts.append(Fact(name="budget", text=text, value=msgspec.to_builtins(budget)))
    if event.messages:
        facts.append(Fact(name="messages", text=f"messages {', '.join(event.messages)}", value=list(event.messages)))
    if event.checkpoint is not UNSET:
        facts.append(_checkpoint_fact(resolver, event.checkpoint, entry[0]))
        facts.extend(_recovery_facts(resolver, event.conversation_id, entry[0]))
    facts.extend(_candidate_fact(resolver, candidate, entry[0]) for candidate in event.candidates)
    unrecorded = event.candidates_total - len(event.candidates)
    if unrecorded > 0:
        text = f"{unrecorded} more ranked candidates (not recorded)"
        facts.append(Fact(name="candidates_not_recorded", text=text, value=unrecorded))
    return delivery_summary(event), facts


def _untrusted_facts(resolver: Resolver, created: ev.DeliveryCreated, position: int) -> list[Fact]:
    """The manifest's causes whose included revision came from an observation
    (contract v1.2 section 6): external text the composer labels untrusted."""
    facts: list[Fact] = []
    for cause_key, revision in created.included:
        observed = resolver.find(
            ("update", cause_key), position, lambda e: type(e) is ev.ObservationRecorded and e.update_revision == revision
        )
        if observed is None:
            continue
        text = f"{cause_key} revision {revision} is observed ({observed[1].kind}): untrusted text, labelled; it grants nothing"
        facts.append(Fact(name="untrusted", text=text, value=[cause_key, revision], source=source(observed)))
    return facts


def delivery_composed(resolver: Resolver, entry: Entry, event: ev.DeliveryComposed, created: ev.DeliveryCreated) -> Rendered:
    """The exact payload recorded for a manifest (contract v1.2 section 6): where, its digest, the adapter."""
    tokens = f", {event.tokens} tokens" if event.tokens is not None else ""
    summary = f"composed by {event.adapter}: payload {event.payload_digest} at {event.payload_ref}{tokens}"
    value = {"ref": event.payload_ref, "digest": event.payload_digest, "adapter": event.adapter, "tokens": event.tokens}
    text = f"payload {event.payload_ref} ({event.adapter}{tokens}): {event.payload_digest} of its bytes"
    facts = [Fact(name="payload", text=text, value=value), *_untrusted_facts(resolver, created, entry[0])]
    if _payload_required(resolver, entry[0]):
        text = "payload_required: the provider's acceptance is recorded only once this payload is (payload_unrecorded before)"
        facts.append(Fact(name="payload_required", text=text, value=True, source=resolver.source(("config",), entry[0])))
    return summary, facts


def _payload_required(resolver: Resolver, position: int | None = None) -> bool:
    config = resolver.find(("config",), position)
    return config is not None and config[1].payload_required is True


def _once_created(render: Renderer) -> Renderer:
    """A delivery's renderer of what comes after it was created (what came before is no link)."""
    return lambda chain, entry, event: render(chain, entry, event) if chain.created is not None else None


class Delivery(Chain):
    kind, key, lifecycle = "delivery", "delivery", DELIVERY
    created: ev.DeliveryCreated | None = None
    payload: ev.DeliveryComposed | None = None  # contract v1.2 section 6
    settled = False  # released, or its epoch is over: nothing it waits for matters now

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        conversation_id = numbered_owner(identifier, "d")
        return [("delivery", identifier), *([("conversation", conversation_id)] if conversation_id else [])]

    def made(self, entry: Entry, event: ev.DeliveryCreated) -> Rendered:
        self.created = event
        return delivery_created(self.resolver, entry, event)

    def composed(self, entry: Entry, event: ev.DeliveryComposed) -> Rendered:
        assert self.created is not None
        self.payload = event
        return delivery_composed(self.resolver, entry, event, self.created)

    def receipted(self, entry: Entry, event: ev.DeliveryReceipted) -> Rendered:
        summary = f"provider says {event.attempt_state}; context now {event.context_tokens} tokens"
        if event.releases:
            summary += "; it holds its revisions no more"
            self.settled = True
        return summary, []

    def turn_ended(self, entry: Entry, event: ev.TurnEnded) -> Rendered:
        if self.identifier in event.released:
            self.settled = True
            return f"turn {event.turn_id} ended {event.outcome}: its revisions are released", []
        return f"turn {event.turn_id} ended {event.outcome} because this delivery was {self.state}", []

    def reset(self, entry: Entry, event: ev.ContextReset) -> Rendered:
        assert self.created is not None
        if event.epoch <= self.created.epoch:
            return None
        self.settled = True
        return f"context reset ({event.reason}): epoch {event.epoch}; this delivery counts for nothing now", []

    def deferred(self, entry: Entry, event: ev.DeliveryDeferred) -> Rendered:
        """The back-off this refusal started (contract v1.2 section 3.6): only on the refused delivery's chain."""
        facts = event.facts
        if facts is None or facts.delivery_id != self.identifier or event.reason != "backoff" or event.until is None:
            return None
        until = event.until.isoformat().replace("+00:00", "Z")
        summary = f"{event.conversation_id} backs off: no delivery before {until}"
        if facts.urgent is not None:
            summary += f"; it holds back urgent {facts.urgent} (contract v1.2 section 3.7)"
        text = (
            f"{facts.refusals} refused or not received deliveries since the last accepted one: "
            f"{facts.delivery_backoff_s} s x 2^{(facts.refusals or 1) - 1}"
        )
        return summary, [Fact(name="backoff", text=text, value=msgspec.to_builtins(facts))]

    renderers = {
        ev.DeliveryCreated: made,
        ev.DeliveryDeferred: deferred,
        **{
            event_type: _once_created(render)
            for event_type, render in {
                ev.DeliveryComposed: composed,
                ev.DeliveryReceipted: receipted,
                ev.TurnEnded: turn_ended,
                ev.ContextReset: reset,
                ev.ObligationMet: said("met the obligation of {e.operation_id} (turn {e.turn_id} completed)"),
                ev.ObligationDue: said(
                    "turn {e.turn_id} completed without listing {e.operation_id}: its obligation is due"
                ),
                ev.AlertResolved: said("resolved {e.alert_id}: {e.detail}"),
            }.items()
        },
    }

    def summary(self) -> str:
        assert self.created is not None
        return delivery_summary(self.created)

    waits = {
        "submitting": ("provider.receipt", "sent for delivery: waits for provider.receipt"),
        "unknown": ("provider.reconcile", "unknown: holds its revisions until provider.reconcile (no blind resend)"),
    }

    def waiting(self) -> list[Waiting]:
        if self.settled:
            return []
        if self.state == "submitting" and self.payload is None and _payload_required(self.resolver):
            # Contract v1.2 section 6: its acceptance would be rejected payload_unrecorded.
            text = (
                "sent for delivery with no payload recorded: under payload_required, a provider.receipt "
                "accepted or unknown is rejected payload_unrecorded until delivery.composed"
            )
            fact = Fact(name="payload_required", text="payload_required: true", value=True, source=self.resolver.source(("config",)))
            return [Waiting(code="delivery.composed", text=text, facts=[fact], since=self.since())]
        return super().waiting()

    def related(self) -> list[str]:
        assert self.created is not None
        related = [f"turn {self.created.turn_id}"] if self.created.turn_id else []
        return related + [f"cause {cause_key}" for cause_key, _ in self.created.included]


class Turn(Chain):
    kind, key, lifecycle = "turn", "turn", TURN
    started: ev.TurnStarted

    def __init__(self, resolver: Resolver, identifier: str) -> None:
        super().__init__(resolver, identifier)
        self.deliveries: list[str] = []

    def start(self, entry: Entry, event: ev.TurnStarted) -> Rendered:
        self.started = event
        rule = _TURN_RULES.get(event.rule, event.rule or event.kind)
        return f"{event.kind} turn started in epoch {event.epoch}: {rule}", []

    def delivered(self, entry: Entry, event: ev.DeliveryCreated) -> Rendered:
        self.deliveries.append(event.delivery_id)
        return delivery_created(self.resolver, entry, event)

    def end(self, entry: Entry, event: ev.TurnEnded) -> Rendered:
        summary = f"ended {event.outcome}"
        if event.delivery_id:
            summary += f" because {event.delivery_id} was refused or not received"
        if event.requeued:
            summary += f"; messages back at the front of the queue: {', '.join(event.requeued)}"
        if event.delivered is None:
            return summary, []
        text = f"delivered listed: [{', '.join(event.delivered)}]"
        return summary, [Fact(name="delivered", text=text, value=event.delivered)]

    renderers = {
        ev.TurnStarted: start,
        ev.DeliveryCreated: delivered,
        ev.TurnEnded: end,
        ev.ObligationMet: said("met the obligation of {e.operation_id} ({e.delivery_id})"),
        ev.ObligationDue: said("left {e.operation_id} out of delivered: its obligation is due"),
    }
    later = {ev.DeliveryReceipted: said("{e.delivery_id}: provider says {e.attempt_state}")}
    leads_to = {ev.DeliveryCreated: lambda e, turn: ("delivery", e.delivery_id) if e.turn_id == turn else None}

    def later_keys(self) -> list[Key]:
        return [("delivery", delivery_id) for delivery_id in self.deliveries]

    def summary(self) -> str:
        return f"{self.started.kind} turn of {self.started.conversation_id}"

    waits = {"running": ("turn.ended", "running: waits for turn.ended")}

    def related(self) -> list[str]:
        return [f"delivery {delivery_id}" for delivery_id in self.deliveries]
