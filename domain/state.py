"""The decision state: the container the areas' evolvers fill and their
deciders and the pass read, rebuilt by folding the log.

It holds the input record's fields (written only by domain/rules.py), one
part per area (`state.actions`, `state.tasks`, ...: each area's records and
the indexes that make the dispatch pass cost what an input touches, declared
and kept in step in `domain/<area>/state.py`, written only by that area), and
the marks the areas leave for the pass (`dirty_*`, `unstalled`). Its methods
are the queries that read across parts and the marking of what the pass must
look at again.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from tandem.domain.facts import PrerequisiteSpec
from tandem.domain.indexes import Timers, index_add, index_remove, reachable  # noqa: F401 (re-exported)
from tandem.domain.lifecycles import ACTION
from tandem.domain.health.state import HealthState
from tandem.domain.tools.state import ToolsState
from tandem.domain.reviews.state import ReviewsState
from tandem.domain.consumer.state import ConsumerState
from tandem.domain.investigations.state import InvestigationsState
from tandem.domain.alerts.state import AlertsState
from tandem.domain.inbox.state import InboxState
from tandem.domain.conversation.state import ConversationState
from tandem.domain.authority.state import AuthorityState
from tandem.domain.tasks.state import TasksState
from tandem.domain.actions.state import ActionsState
from tandem.domain.records import (
    Conversation,
    LatestObservation,
    Question,
    TraceProgress,
)

IN_FLIGHT = ACTION.in_flight
TERMINAL = ACTION.terminal
# The terminal states that fail a prerequisite: every one but succeeded.
PREREQUISITE_FAILED = TERMINAL - {"succeeded"}
assert {"pending", "fenced"} <= set(ACTION.states) - TERMINAL  # the two live states indexed by name below


@dataclass(slots=True)
class State:
    """Everything decide and the pass read. Rebuilt by folding the log."""

    position: int = 0  # events applied
    seq: int = 0  # inputs recorded (accepted or rejected)
    last_at: datetime.datetime | None = None
    configurable: bool = True  # no input of another kind than engine.configure yet
    idempotency: dict[str, bytes] = field(default_factory=dict)  # input id -> body digest
    traces: dict[str, TraceProgress] = field(default_factory=dict)  # ingest progress by trace name
    previous_at: datetime.datetime | None = None  # the `at` of the input before the last one
    # ---- the areas' parts, in domain/areas.py's order
    authority: AuthorityState = field(default_factory=AuthorityState)
    tasks: TasksState = field(default_factory=TasksState)
    actions: ActionsState = field(default_factory=ActionsState)
    inbox: InboxState = field(default_factory=InboxState)
    reviews: ReviewsState = field(default_factory=ReviewsState)
    consumer: ConsumerState = field(default_factory=ConsumerState)
    conversation: ConversationState = field(default_factory=ConversationState)
    alerts: AlertsState = field(default_factory=AlertsState)
    tools: ToolsState = field(default_factory=ToolsState)
    health: HealthState = field(default_factory=HealthState)
    investigations: InvestigationsState = field(default_factory=InvestigationsState)
    # ---- what the pass must look at again (filled by evolve, emptied by the pass)
    dirty_actions: set[str] = field(default_factory=set)
    dirty_tasks: set[str] = field(default_factory=set)
    # Actions with a source revision the source rule must look at again (contract v1.2 section 2.2).
    dirty_sources: set[str] = field(default_factory=set)
    # Contract v1.2 section 4.4: the stalled tasks that progressed or ended since the last pass
    # (its no_progress alerts to resolve), marked by the areas like the dirty sets.
    unstalled: set[str] = field(default_factory=set)
    watchdog_fresh: bool = False  # as of the last pass

    # ---------------------------------------------------------------- queries

    def update_revision(self, cause_key: str) -> int:
        """The inbox update revision of a cause (0 while it has none)."""
        update = self.inbox.updates.get(cause_key)
        return update.revision if update is not None else 0

    def is_fresh(self, at: datetime.datetime | None) -> bool:
        """Spec 6: fresh iff a heartbeat exists and at - last <= max age (the
        last beat time, contract v1.2 section 4.1), and the host is running
        (not suspended, nor resuming before a heartbeat since: section 4.5)."""
        if self.health.heartbeat_at is None or at is None or self.health.host != "running":
            return False
        return (at - self.health.heartbeat_at).total_seconds() <= self.authority.config.watchdog_max_age_s

    def provider_unready(self, conversation: Conversation) -> bool:
        """Contract v1.2 section 4.3: its provider's incident is open."""
        return conversation.provider is not None and bool(self.alerts.incidents.get(f"provider/{conversation.provider}"))

    def question_active(self, key: tuple[str, str]) -> bool:
        question = self.tasks.questions[key]
        return question.state == "open" and self.tasks.by_id[question.task_id].state == "active"

    def wider_hold(self) -> bool:
        return any(self.question_active(key) for key in self.tasks.unknown_questions)

    # ------------------------------------------------------- dirty marking

    def touch_action(self, operation_id: str) -> None:
        self.dirty_actions.add(operation_id)

    def touch_all_pending(self) -> None:
        self.dirty_actions.update(self.actions.pending)

    def touch_maintenance(self) -> None:
        """Whether an owner is active may have changed: the pending maintenance actions (owner_active)."""
        self.dirty_actions.update(op for op in self.actions.maintenance if op in self.actions.pending)

    def touch_dependents(self, operation_id: str) -> None:
        """An action and, transitively, every action listing it as a prerequisite."""
        for current in reachable(operation_id, self._action_dependents):
            if current in self.actions.by_id:  # a question may list an operation not proposed yet
                self.dirty_actions.add(current)

    def touch_task(self, task_id: str) -> None:
        """A task, its actions, and transitively the tasks depending on it."""
        for current in reachable(task_id, lambda task: self.tasks.by_id[task].dependents):
            self.dirty_tasks.add(current)
            waiting = self.actions.pending_by_task.get(current)
            if waiting:
                self.dirty_actions.update(waiting)

    def _action_dependents(self, operation_id: str) -> list[str]:
        action = self.actions.by_id.get(operation_id)
        return action.dependents if action is not None else []

    def touch_cause(self, cause_key: str) -> None:
        """The cause was revised: its live actions with a source revision meet
        the source rule again, and its pending rule actions the opt-in."""
        for operation_id in self.actions.by_cause.get(cause_key, ()):
            action = self.actions.by_id[operation_id]
            if action.state not in ("pending", "fenced"):
                continue
            if action.source_revision is not None:
                self.dirty_sources.add(operation_id)
            if action.rule_id is not None and action.state == "pending" and not self.rule_opens_every_scope(action.rule_id):
                self.dirty_actions.add(operation_id)

    def rule_opens_every_scope(self, rule_id: str) -> bool:
        return "*" in self.authority.rule_scopes.get(rule_id, ("*",))

    def opted_in(self, rule_id: str | None, cause_key: str) -> bool:
        """A rule's action is opted in when its rule's scopes hold "*" or the
        scope of its cause's latest observation (contract v1.2 section 2.4);
        a task's always is."""
        if rule_id is None or self.rule_opens_every_scope(rule_id):
            return True
        latest = self.latest_observation(cause_key)
        return latest is not None and latest.scope in self.authority.rule_scopes[rule_id]

    def prerequisite_status(self, prerequisite: PrerequisiteSpec) -> str:
        """"met", "pending" or "failed" (contract section 4; with
        `evidence_required`, contract v1.2 section 2.5: a success without its
        evidence, or without the artifact revision required, stays pending)."""
        other = self.actions.by_id[prerequisite.operation_id]
        if other.state != "succeeded":
            return "failed" if other.state in PREREQUISITE_FAILED else "pending"
        required = prerequisite.artifact_revision
        if prerequisite.evidence_required is True:
            if required is not None and other.artifact_revision is not None and other.artifact_revision != required:
                return "failed"
            if (required is not None and other.artifact_revision is None) or not other.evidence_refs:
                return "pending"
            return "met"
        return "failed" if required is not None and other.artifact_revision != required else "met"

    def latest_observation(self, cause_key: str) -> LatestObservation | None:
        update = self.inbox.updates.get(cause_key)
        return update.latest if update is not None else None

    def touch_all_tasks(self) -> None:
        for task_id, task in self.tasks.by_id.items():
            if task.state == "active":
                self.dirty_tasks.add(task_id)
        self.touch_all_pending()

    def touch_resource(self, resource: str) -> None:
        waiting = self.actions.pending_by_resource.get(resource)
        if waiting:
            self.dirty_actions.update(waiting)

    def touch_conversation(self, conversation_id: str) -> None:
        for task_id in self.conversation.by_id[conversation_id].tasks:
            waiting = self.actions.pending_by_task.get(task_id)
            if waiting:
                self.dirty_actions.update(waiting)

    def touch_runtime(self, runtime_id: str) -> None:
        """The pending actions naming the runtime (runtime_not_admitted)."""
        for operation_id in self.actions.by_runtime.get(runtime_id, ()):
            if operation_id in self.actions.pending:
                self.dirty_actions.add(operation_id)

    def touch_grant(self, grant_id: str) -> None:
        waiting = self.actions.pending_by_grant.get(grant_id)
        if waiting:
            self.dirty_actions.update(waiting)

    def pending_of_task(self, task_id: str) -> list[str]:
        """The task's pending actions, in proposal order."""
        return sorted(self.actions.pending_by_task.get(task_id, ()), key=lambda op: self.actions.by_id[op].order)

    def pending_of_grant(self, grant_id: str) -> list[str]:
        return sorted(self.actions.pending_by_grant.get(grant_id, ()), key=lambda op: self.actions.by_id[op].order)

    def touch_question(self, question: Question) -> None:
        if question.affected == "unknown":
            self.touch_all_tasks()
        elif question.affected == "task":
            self.touch_task(question.task_id)
        else:
            for operation_id in question.affected:
                self.touch_dependents(operation_id)
            self.dirty_tasks.add(question.task_id)


    # ------------------------------------------------- the action indexes

    # ----------------------------------------------- the question indexes

    # -------------------------------- the foreground's candidate updates
