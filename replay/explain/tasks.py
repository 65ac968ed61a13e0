"""Tasks and their questions."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.lifecycles import QUESTION, TASK
from tandem.replay.explain.blocks import Runs, block_summary, coded_facts, track_runs, waiting_from_blocks
from tandem.replay.explain.chain import Chain, Rendered, said
from tandem.replay.explain.facts import question_fact, question_id, revision_facts
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Entry, Resolver, of_type, source
from tandem.replay.explain.model import Fact, Waiting


class Question(Chain):
    kind, key, lifecycle = "question", "question", QUESTION
    raised: ev.QuestionRaised

    def __init__(self, resolver: Resolver, identifier: str) -> None:
        super().__init__(resolver, identifier)
        self.held: dict[str, int] = {}  # operation -> the position it was last held at

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        return [("question", identifier), ("holds", identifier)]

    def asked(self, entry: Entry, event: ev.QuestionRaised) -> Rendered:
        self.raised = event
        affected = event.affected if isinstance(event.affected, str) else "[" + ", ".join(event.affected) + "]"
        again = "reopened" if event.reopened else ("raised again" if event.times_raised > 1 else "raised")
        summary = (
            f"{again} (times_raised {event.times_raised}) for {event.recipient}: {event.blocking_reason}; "
            f"affected {affected}, evidence revision {event.evidence_revision}"
        )
        return summary, []

    def holds(self, entry: Entry, event: ev.ActionBlocked) -> Rendered:
        mine = [
            (fact.code, question)
            for fact in event.facts
            for question in fact.questions or ()
            if question_id(question.task_id, question.question_key) == self.identifier
        ]
        self.held[event.operation_id] = entry[0]
        summary = f"holds {event.operation_id} ({mine[0][0]}); its {block_summary(list(event.blocked_by))}"
        return summary, [question_fact(self.resolver, mine[0][1], entry[0])]

    renderers = {
        ev.QuestionRaised: asked,
        ev.QuestionResurfaced: said("resurfaced: still open {e.k} x question_resurface_s after it was first seen"),
        ev.QuestionAnswered: said(
            "answered: {e.answer!r} (folded into the task's fallback_decisions; the task is revised)"
        ),
        ev.ActionBlocked: holds,
        ev.TaskHoldsChanged: lambda chain, entry, event: (
            f"holds task {event.task_id}; its holds [{', '.join(event.holds)}]",
            [],
        ),
    }

    def summary(self) -> str:
        return f"question on task {self.raised.task_id}: {self.raised.blocking_reason}"

    def waiting(self) -> list[Waiting]:
        if self.state != "open":
            return []
        facts = []
        for operation_id, position in self.held.items():
            now = self.resolver.find(("action", operation_id))
            if now is not None and now[0] == position:
                text = f"holds {operation_id} now"
                facts.append(Fact(name="holds", text=text, value=operation_id, source=source(now)))
        raised = self.resolver.find(("question", self.identifier), where=of_type(ev.QuestionRaised))
        text = f"open: waits for question.answer (asked of {self.raised.recipient})"
        return [Waiting(code="question.answer", text=text, facts=facts, since=source(raised))]

    def related(self) -> list[str]:
        return [f"task {self.raised.task_id}", *(f"operation {operation_id}" for operation_id in self.held)]


def _authority(operations: list[str], roots: list[str]) -> str:
    return f"operations [{', '.join(operations)}], write roots [{', '.join(roots)}]"


class Task(Chain):
    kind, key, lifecycle = "task", "task", TASK
    delegated: ev.TaskDelegated
    revision = 0

    def __init__(self, resolver: Resolver, identifier: str) -> None:
        super().__init__(resolver, identifier)
        self.holds: list[str] = []
        self.runs: Runs = {}
        self.actions: list[str] = []
        self.questions: list[str] = []

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        return [("task", identifier), ("task_action", identifier)]

    def label(self) -> str | None:
        return f"{self.state}, revision {self.revision}" if self.state != "unknown" else None

    def issued(self, entry: Entry, event: ev.GrantIssued) -> Rendered:
        summary = (
            f"grant {event.grant_id} revision 1 issued under policy revision {event.policy_revision}: "
            f"{_authority(event.allowed_operations, event.write_roots)}"
        )
        if event.dropped_operations or event.dropped_roots:
            summary += f"; narrowed away: [{', '.join(event.dropped_operations + event.dropped_roots)}]"
        return summary, revision_facts(self.resolver, entry[0], (("policy",), event.policy_revision))

    def delegate(self, entry: Entry, event: ev.TaskDelegated) -> Rendered:
        self.delegated, self.revision = event, 1
        depends = f", depends on [{', '.join(event.depends_on)}]" if event.depends_on else ""
        return f"delegated from {event.conversation_id} (revision 1): {event.goal}{depends}", []

    def revise(self, entry: Entry, event: ev.TaskRevised) -> Rendered:
        self.revision = event.revision
        fenced = f"; fenced [{', '.join(event.fenced)}]" if event.fenced else ""
        return f"revised to revision {event.revision}{fenced}", []

    def hold(self, entry: Entry, event: ev.TaskHoldsChanged) -> Rendered:
        self.holds = list(event.holds)
        track_runs(self.runs, entry, self.holds, event.facts)
        return f"holds [{', '.join(self.holds)}]", coded_facts(self.resolver, entry, event.facts)

    def ask(self, entry: Entry, event: ev.QuestionRaised) -> Rendered:
        asked = question_id(event.task_id, event.question_key)
        if asked not in self.questions:
            self.questions.append(asked)
        return f"question {asked} raised: {event.blocking_reason}", []

    def propose(self, entry: Entry, event: ev.ActionProposed) -> Rendered:
        self.actions.append(event.operation_id)
        return f"action {event.operation_id} proposed ({event.operation} {event.target})", []

    def revise_grant(self, entry: Entry, event: ev.GrantRevised) -> Rendered:
        summary = (
            f"grant {event.grant_id} revised to revision {event.revision}: "
            f"{_authority(event.allowed_operations, event.write_roots)}"
        )
        because = event.fenced_because.items()
        return summary, [Fact(name="fenced_because", text=f"{op}: {why}", value={op: why}) for op, why in because]

    renderers = {
        ev.GrantIssued: issued,
        ev.TaskDelegated: delegate,
        ev.TaskRevised: revise,
        ev.TaskHoldsChanged: hold,
        ev.TaskCompleted: lambda chain, entry, e: (f"completed with evidence [{', '.join(e.evidence_refs)}]", []),
        ev.TaskCancelled: said("cancelled: grant revoked, live actions cancelled"),
        ev.QuestionRaised: ask,
        ev.QuestionAnswered: said("question {e.task_id}/{e.question_key} answered"),
        ev.ActionProposed: propose,
        ev.ScopePaused: said("paused"),
        ev.ScopeResumed: said("resumed"),
    }
    later = {
        ev.GrantRevised: revise_grant,
        ev.GrantRevoked: said("grant {e.grant_id} revoked"),
        ev.BudgetExhausted: said("grant {e.grant_id} budget exhausted: usage {e.usage} >= token_limit {e.token_limit}"),
    }
    leads_to = {ev.TaskDelegated: lambda event, task: ("grant", event.grant_id) if event.task_id == task else None}

    def later_keys(self) -> list[Key]:
        return [("grant", self.delegated.grant_id)]

    def summary(self) -> str:
        return f"{self.state}, revision {self.revision}, holds [{', '.join(self.holds)}]: {self.delegated.goal}"

    def waiting(self) -> list[Waiting]:
        held = self.state == "active" and self.holds
        return waiting_from_blocks(self.resolver, self.runs, self.holds) if held else []

    def related(self) -> list[str]:
        return [f"operation {op}" for op in self.actions] + [f"question {q}" for q in self.questions]
