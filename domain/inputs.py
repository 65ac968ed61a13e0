"""Inputs: the commands of docs/contract.md section 3, one tagged msgspec Struct per kind.

A trace line is decoded once, at the edge, into one of these Structs by
`INPUT_DECODER`; past that point nothing re-parses JSON. A decode failure is a
schema error (the whole trace is refused); a well-formed input the domain
refuses is a rejection (recorded, processing goes on).

Evolution rule (msgspec's): new fields get defaults, existing field types never
change. `UNSET` marks "not given", which the contract distinguishes from `null` and
from zero (a usage field left out is unknown, not 0).
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal, Union

import msgspec
import msgspec.inspect
from msgspec import UNSET, Meta, Struct, UnsetType

from tandem.domain.nesting import (
    lone_surrogate_error,
    nesting_depth_max,
    opening_brackets,
    repeated_key_error,
    too_deep_error,
    too_deep_in_json,
    too_deep_in_value,
    unbounded_integer_error,
)

from tandem.domain.input_base import (  # noqa: F401 (re-exported: `inp.Identifier` is input_base's)
    identifier_chars_max,
    text_chars_max,
    list_items_max,
    Identifier,
    Text, ToolName,
    Count,
    Positive,
    Revision,
    Tokens,
    Actor,
    ACTORS,
    HUMAN_ONLY,
    given,
    accepted_actors,
    Input,
    require_one_of,
    require_exactly_one,
)
from tandem.domain.continuity_inputs import CheckpointBackground, CloseInvestigation, OpenInvestigation  # v1.2 section 5

# ---------------------------------------------------------------- shared parts


class GrantRequest(Struct, frozen=True, forbid_unknown_fields=True):
    grant_id: Identifier
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)]
    max_attempts: Positive = 3
    token_limit: Positive | None = None
    # Contract v1.2 section 3.1: left out, they are not recorded at all.
    execution_deadline_s: Positive | UnsetType = UNSET
    retry_backoff_s: Count | UnsetType = UNSET
    call_limit: Positive | UnsetType = UNSET


class Prerequisite(Struct, frozen=True, forbid_unknown_fields=True):
    operation_id: Identifier
    outcome: Literal["succeeded"]
    artifact_revision: Identifier | UnsetType = UNSET
    # Contract v1.2 section 2.5: the dependent stays pending until it has evidence.
    evidence_required: bool | UnsetType = UNSET


class InputRevisions(Struct, frozen=True, forbid_unknown_fields=True):
    grant: Revision
    task: Revision | UnsetType = UNSET
    intent: Revision | UnsetType = UNSET


class ObservationFields(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    source_id: Identifier
    kind: Identifier
    scope: Text
    fingerprint: Text
    complete: bool
    cause_key: Identifier | UnsetType = UNSET
    source_version: Identifier | UnsetType = UNSET
    status: Text | UnsetType = UNSET
    commit_sha: Identifier | UnsetType = UNSET
    text: Text | UnsetType = UNSET
    evidence_ref: Identifier | UnsetType = UNSET
    tokens: Tokens | UnsetType = UNSET
    deleted: bool = False
    origin_conversation: Identifier | UnsetType = UNSET
    # Contract v1.1 (section 10): unset when left out, so a v1 input is stored as before.
    subject: Identifier | UnsetType = UNSET
    source_time: Annotated[datetime.datetime, Meta(tz=True)] | UnsetType = UNSET
    truncated: bool | UnsetType = UNSET
    batch_id: Identifier | UnsetType = UNSET  # contract v1.2 section 7.1


class LogEntry(Struct, frozen=True, forbid_unknown_fields=True):
    seq: Count
    observation: ObservationFields


# ------------------------------------------------- 3.1 configuration and policy


class ConfigureEngine(Input, tag="engine.configure"):
    watchdog_max_age_s: Count | UnsetType = UNSET
    fallback_after_s: Count | UnsetType = UNSET
    question_resurface_s: Positive | UnsetType = UNSET
    wake_batch_max: Positive | UnsetType = UNSET
    # Contract v1.2 section 3.2 (budgets).
    wake_min_interval_s: Count | UnsetType = UNSET
    wake_batch_wait_s: Count | UnsetType = UNSET
    delivery_backoff_s: Count | UnsetType = UNSET
    delivery_retries_max: Count | UnsetType = UNSET
    backlog_degraded_at: Positive | UnsetType = UNSET
    exhausted_alerts: bool | UnsetType = UNSET
    # Contract v1.2 (section 4.5): an input this long after the previous one is a resume.
    suspend_gap_s: Positive | UnsetType = UNSET
    payload_required: bool | UnsetType = UNSET  # contract v1.2 section 6
    investigation_max_s: Positive | UnsetType = UNSET  # contract v1.2 section 5.1
    investigation_calls_max: Positive | UnsetType = UNSET


class SetPolicy(Input, tag="policy.set"):
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)]


class SetRule(Input, tag="rule.set"):
    rule_id: Identifier
    grant: GrantRequest
    # Contract v1.2 section 2.4: the scopes the rule is opted in for ("*": every one).
    scopes: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET


# --------------------------------------------- 3.2 tasks, grants and questions


class DelegateTask(Input, tag="task.delegate"):
    task_id: Identifier
    conversation_id: Identifier
    message_refs: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    goal: Text
    done_when: Annotated[list[Text], Meta(min_length=1, max_length=list_items_max)]
    grant: GrantRequest
    constraints: dict[str, Any] | UnsetType = UNSET
    fallback_decisions: dict[str, Text] | UnsetType = UNSET
    depends_on: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET
    progress_deadline_s: Positive | UnsetType = UNSET  # contract v1.2 section 4.4


class ReviseTask(Input, tag="task.revise"):
    task_id: Identifier
    expected_revision: Revision
    goal: Text | UnsetType = UNSET
    done_when: Annotated[list[Text], Meta(min_length=1, max_length=list_items_max)] | UnsetType = UNSET
    constraints: dict[str, Any] | UnsetType = UNSET
    fallback_decisions: dict[str, Text] | UnsetType = UNSET
    progress_deadline_s: Positive | UnsetType = UNSET  # contract v1.2 section 4.4

    def __post_init__(self) -> None:
        require_one_of(self, "goal", "done_when", "constraints", "fallback_decisions", "progress_deadline_s")


class ReviseGrant(Input, tag="grant.revise"):
    grant_id: Identifier
    expected_revision: Revision
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET
    max_attempts: Positive | UnsetType = UNSET
    token_limit: Positive | UnsetType = UNSET
    execution_deadline_s: Positive | UnsetType = UNSET
    retry_backoff_s: Count | UnsetType = UNSET
    call_limit: Positive | UnsetType = UNSET

    def __post_init__(self) -> None:
        require_one_of(
            self,
            "allowed_operations", "write_roots", "max_attempts", "token_limit", "execution_deadline_s", "retry_backoff_s",
            "call_limit",
        )  # fmt: skip


class CancelTask(Input, tag="task.cancel"):
    task_id: Identifier


class CompleteTask(Input, tag="task.complete"):
    task_id: Identifier
    evidence_refs: Annotated[list[Identifier], Meta(min_length=1, max_length=list_items_max)]


class RaiseQuestion(Input, tag="question.raise"):
    task_id: Identifier
    question_key: Identifier
    recipient: Identifier
    blocking_reason: Text
    affected: Annotated[list[Identifier], Meta(max_length=list_items_max)] | Literal["task", "unknown"]
    evidence_revision: Revision


class AnswerQuestion(Input, tag="question.answer"):
    task_id: Identifier
    question_key: Identifier
    answer: Text


# ------------------------------------------------------------ 3.3 managed actions


class ProposeAction(Input, tag="action.propose"):
    operation_id: Identifier
    cause_key: Identifier
    operation: Identifier
    target: Text
    resource: Identifier
    grant_id: Identifier
    input_revisions: InputRevisions
    write_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    task_id: Identifier | UnsetType = UNSET
    rule_id: Identifier | UnsetType = UNSET
    prerequisites: Annotated[list[Prerequisite], Meta(max_length=list_items_max)] = []
    unattended: bool = True
    generation: Revision | UnsetType = UNSET
    # Contract v1.2 section 2.1: the cause's revision it answers, rechecked before every claim.
    source_revision: Revision | UnsetType = UNSET
    target_sha: Identifier | UnsetType = UNSET
    moot_statuses: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET
    # Contract v1.2 section 1.4: the worker runtime that will execute it.
    runtime_id: Identifier | UnsetType = UNSET
    priority: Literal["normal", "maintenance"] | UnsetType = UNSET  # contract v1.2 section 8.1

    def __post_init__(self) -> None:
        require_exactly_one(self, "task_id", "rule_id")
        if self.sender == "background" and self.generation is UNSET:
            raise ValueError("`generation` is required when the actor is background")
        for name in ("target_sha", "moot_statuses"):
            if getattr(self, name) is not UNSET and self.source_revision is UNSET:
                raise ValueError(f"`{name}` needs `source_revision`")


class RevalidateAction(Input, tag="action.revalidate"):
    operation_id: Identifier
    input_revisions: InputRevisions
    generation: Revision | UnsetType = UNSET
    source_revision: Revision | UnsetType = UNSET  # contract v1.2 section 2.3

    def __post_init__(self) -> None:
        if self.sender == "background" and self.generation is UNSET:
            raise ValueError("`generation` is required when the actor is background")


class CancelAction(Input, tag="action.cancel"):
    operation_id: Identifier


class ExecutorReceipt(Input, tag="executor.receipt"):
    operation_id: Identifier
    attempt_id: Identifier
    result: Literal["queued", "accepted", "refused", "unknown"]


class ExecutorReconcile(Input, tag="executor.reconcile"):
    operation_id: Identifier
    attempt_id: Identifier
    observed: Literal["accepted", "not_received"]


class ExecutorOutcome(Input, tag="executor.outcome"):
    operation_id: Identifier
    outcome: Literal["succeeded", "failed", "cancelled"]
    artifact_revision: Identifier | UnsetType = UNSET
    evidence_ref: Identifier | UnsetType = UNSET


class AttachEvidence(Input, tag="evidence.attach"):
    """Contract v1.2 section 2.5: evidence of a succeeded action, after its outcome."""

    operation_id: Identifier
    evidence_ref: Identifier
    artifact_revision: Identifier | UnsetType = UNSET


# ------------------------------------------- 3.4 observations, change log, triage


class Observe(Input, tag="observe"):
    # The fields of ObservationFields (msgspec Structs cannot inherit from two
    # bases with fields); `observation()` gives the shared shape.
    source_id: Identifier
    kind: Identifier
    scope: Text
    fingerprint: Text
    complete: bool
    cause_key: Identifier | UnsetType = UNSET
    source_version: Identifier | UnsetType = UNSET
    status: Text | UnsetType = UNSET
    commit_sha: Identifier | UnsetType = UNSET
    text: Text | UnsetType = UNSET
    evidence_ref: Identifier | UnsetType = UNSET
    tokens: Tokens | UnsetType = UNSET
    deleted: bool = False
    origin_conversation: Identifier | UnsetType = UNSET
    # Contract v1.1 (section 10): unset when left out, so a v1 input is stored as before.
    subject: Identifier | UnsetType = UNSET
    source_time: Annotated[datetime.datetime, Meta(tz=True)] | UnsetType = UNSET
    truncated: bool | UnsetType = UNSET
    batch_id: Identifier | UnsetType = UNSET  # contract v1.2 section 7.1

    def observation(self) -> ObservationFields:
        return ObservationFields(**{f: getattr(self, f) for f in ObservationFields.__struct_fields__})


class LogBatch(Input, tag="log.batch"):
    consumer_id: Identifier
    epoch: Count
    entries: Annotated[list[LogEntry], Meta(max_length=list_items_max)]


class LogPruned(Input, tag="log.pruned"):
    consumer_id: Identifier
    epoch: Count
    max_deleted_seq: Count


class LogReconcile(Input, tag="log.reconcile"):
    consumer_id: Identifier
    reconciliation_id: Identifier
    epoch: Count
    retained_head: Count
    facts: Annotated[list[ObservationFields], Meta(max_length=list_items_max)]


class AliasSource(Input, tag="source.alias"):  # contract v1.2 section 7.2
    source_id: Identifier  # the alias
    alias_of: Identifier  # the source it is the same object as


class ClassifyTriage(Input, tag="triage.classify"):
    conversation_id: Identifier
    generation: Revision
    cause_key: Identifier
    update_revision: Revision
    disposition: Literal["routine", "actionable", "urgent", "needs_input"]
    action_priority: int
    notification_priority: int


# ------------------------------------------------------------ 5 conversations


class OpenConversation(Input, tag="conversation.open"):
    conversation_id: Identifier
    role: Literal["foreground", "background"]
    context_limit: Positive
    reserve: Count
    steer: bool = False
    foreground_id: Identifier | UnsetType = UNSET
    provider: Identifier | UnsetType = UNSET  # contract v1.2 section 4.3: the provider account

    def __post_init__(self) -> None:
        if self.role == "background" and self.foreground_id is UNSET:
            raise ValueError("a background conversation needs `foreground_id`")
        if self.role == "foreground" and self.foreground_id is not UNSET:
            raise ValueError("`foreground_id` is only for a background conversation")


class BindBackground(Input, tag="background.bind"):
    conversation_id: Identifier
    foreground_id: Identifier
    generation: Revision


class HumanMessage(Input, tag="human.message"):
    conversation_id: Identifier
    message_id: Identifier
    text: Text
    tokens: Tokens | UnsetType = UNSET


class EditQueue(Input, tag="human.queue_edit"):
    conversation_id: Identifier
    message_id: Identifier
    op: Literal["edit", "withdraw"]
    text: Text | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.op == "edit" and self.text is UNSET:
            raise ValueError("`op: edit` needs `text`")
        if self.op == "withdraw" and self.text is not UNSET:
            raise ValueError("`op: withdraw` takes no `text`")


class SyncIntent(Input, tag="intent.synced"):
    conversation_id: Identifier
    intent_revision: Revision
    generation: Revision


class ProviderReceipt(Input, tag="provider.receipt"):
    delivery_id: Identifier
    result: Literal["accepted", "unknown", "refused"]


class ProviderReconcile(Input, tag="provider.reconcile"):
    delivery_id: Identifier
    observed: Literal["accepted", "not_received"]


class EndTurn(Input, tag="turn.ended"):
    turn_id: Identifier
    outcome: Literal["completed", "failed", "interrupted"]
    delivered: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET


class ResetContext(Input, tag="context.reset"):
    conversation_id: Identifier
    reason: Literal["compaction", "rollover", "fork", "rollback", "handoff", "provider_loss"]


class ReportUsage(Input, tag="usage.report"):
    conversation_id: Identifier | UnsetType = UNSET
    operation_id: Identifier | UnsetType = UNSET
    input_tokens: Tokens | UnsetType = UNSET
    cached_input_tokens: Tokens | UnsetType = UNSET
    cache_write_tokens: Tokens | UnsetType = UNSET
    output_tokens: Tokens | UnsetType = UNSET
    context_tokens: Tokens | UnsetType = UNSET

    def __post_init__(self) -> None:
        require_exactly_one(self, "conversation_id", "operation_id")


class RequireApproval(Input, tag="approval.required"):
    conversation_id: Identifier
    request_id: Identifier
    detail: Text


class ResolveApproval(Input, tag="approval.resolved"):
    conversation_id: Identifier
    request_id: Identifier


class HoldFailure(Input, tag="hold.failure"):
    conversation_id: Identifier


class ReleaseHold(Input, tag="hold.release"):
    conversation_id: Identifier


# ------------------------------------------------- 6 alerts, health and time


Time = Annotated[datetime.datetime, Meta(tz=True)]


class Heartbeat(Input, tag="watchdog.heartbeat"):
    generation: Revision
    beat_at: Time | UnsetType = UNSET  # contract v1.2 section 4.1: when the watchdog wrote it


class RaiseIncident(Input, tag="health.incident"):
    incident_id: Identifier
    kind: Identifier
    detail: Text
    # Contract v1.2 section 4.2: when the prober saw it, and its last successful check.
    observed_at: Time | UnsetType = UNSET
    last_success_at: Time | UnsetType = UNSET


class ReportProviderReadiness(Input, tag="provider.readiness"):
    """Contract v1.2 section 4.3: a provider account is ready, or not and why."""

    provider: Identifier
    ready: bool
    reason: Identifier | UnsetType = UNSET
    auth_expires_at: Time | UnsetType = UNSET
    observed_at: Time | UnsetType = UNSET

    def __post_init__(self) -> None:
        if not self.ready and self.reason is UNSET:
            raise ValueError("`ready: false` needs `reason`")


class SuspendHost(Input, tag="host.suspend"):
    pass


class ResumeHost(Input, tag="host.resume"):
    pass


class RecoverIncident(Input, tag="health.recovered"):
    incident_id: Identifier


class StopDaemon(Input, tag="daemon.stop"):
    expected: bool


class StartDaemon(Input, tag="daemon.start"):
    pass


class PauseScope(Input, tag="scope.pause"):
    scope: Identifier


class ResumeScope(Input, tag="scope.resume"):
    scope: Identifier


class ProposeCard(Input, tag="card.propose"):
    card_id: Identifier
    cause_key: Identifier
    summary: Text
    generation: Revision


class Tick(Input, tag="tick"):
    pass


class SeeAlert(Input, tag="alert.seen"):
    alert_id: Identifier


class ResolveAlert(Input, tag="alert.resolve"):
    alert_id: Identifier


# ------------------------------------ contract v1.2 section 1: tool policy and runtimes

ToolRole = Literal["background", "worker"]


class SetToolPolicy(Input, tag="tool_policy.set"):
    role: ToolRole
    allowed_tools: Annotated[list[ToolName], Meta(max_length=list_items_max)]
    read_roots: Annotated[list[Text], Meta(max_length=list_items_max)]


class AdmitRuntime(Input, tag="runtime.admit"):
    runtime_id: Identifier
    role: ToolRole
    adapter: Identifier
    tool_policy_revision: Revision
    tools: Annotated[list[ToolName], Meta(max_length=list_items_max)]
    read_roots: Annotated[list[Text], Meta(max_length=list_items_max)]
    conversation_id: Identifier | UnsetType = UNSET
    generation: Revision | UnsetType = UNSET
    inherited_tools: Annotated[list[ToolName], Meta(max_length=list_items_max)] = []
    isolation_test_ref: Identifier | UnsetType = UNSET

    def __post_init__(self) -> None:
        background = self.role == "background"
        for name in ("conversation_id", "generation"):
            if background and getattr(self, name) is UNSET:
                raise ValueError(f"a background runtime needs `{name}`")
            if not background and getattr(self, name) is not UNSET:
                raise ValueError(f"`{name}` is only for a background runtime")


class RequestTool(Input, tag="tool.request"):
    runtime_id: Identifier
    call_id: Identifier
    tool: ToolName
    read_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    write_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    operation_id: Identifier | UnsetType = UNSET
    investigation_id: Identifier | UnsetType = UNSET  # contract v1.2 section 5.1


# Contract v1.2 section 6: `sha256:` and 64 lowercase hex digits (schema).
PayloadDigest = Annotated[str, Meta(pattern="^sha256:[0-9a-f]{64}$")]


class ComposeDelivery(Input, tag="delivery.composed"):
    delivery_id: Identifier
    payload_ref: Identifier
    payload_digest: PayloadDigest
    adapter: Identifier
    tokens: Tokens | UnsetType = UNSET


AnyInput = Union[
    ConfigureEngine, SetPolicy, SetRule,
    DelegateTask, ReviseTask, ReviseGrant, CancelTask, CompleteTask, RaiseQuestion, AnswerQuestion,
    ProposeAction, RevalidateAction, CancelAction, ExecutorReceipt, ExecutorReconcile, ExecutorOutcome,
    AttachEvidence,
    Observe, LogBatch, LogPruned, LogReconcile, ClassifyTriage, AliasSource,
    OpenConversation, BindBackground, HumanMessage, EditQueue, SyncIntent, ProviderReceipt,
    ProviderReconcile, EndTurn, ResetContext, ReportUsage, RequireApproval, ResolveApproval,
    HoldFailure, ReleaseHold,
    Heartbeat, RaiseIncident, RecoverIncident, StopDaemon, StartDaemon, PauseScope, ResumeScope,
    ProposeCard, Tick, SeeAlert, ResolveAlert,
    SetToolPolicy, AdmitRuntime, RequestTool,
    ReportProviderReadiness, SuspendHost, ResumeHost,
    ComposeDelivery,
    OpenInvestigation, CloseInvestigation, CheckpointBackground,
]  # fmt: skip

INPUT_KINDS: tuple[str, ...] = tuple(cls.__struct_config__.tag for cls in AnyInput.__args__)  # type: ignore[attr-defined]
INPUT_DECODER = msgspec.json.Decoder(AnyInput)
_ENCODER = msgspec.json.Encoder()


# ------------------------------------------------------------------ nesting


def _holds_any(info: msgspec.inspect.Type) -> bool:
    """Whether a field's type admits free-form values (`Any`) anywhere in it."""
    pending: list[Any] = [info]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, msgspec.inspect.AnyType):
            return True
        if id(node) in seen or not isinstance(node, (msgspec.inspect.Type, msgspec.inspect.Field)):
            continue
        seen.add(id(node))
        for name in node.__struct_fields__:
            part = getattr(node, name)
            pending.extend(part if isinstance(part, tuple) else (part,))
    return False


def _free_form_fields() -> dict[type, tuple[str, ...]]:
    """Each input kind's fields that admit `Any` (derived, so a new free-form
    field is bounded too). Kinds without one are not walked: the fast path."""
    found: dict[type, tuple[str, ...]] = {}
    for cls in AnyInput.__args__:  # type: ignore[attr-defined]
        names = tuple(f.name for f in msgspec.inspect.type_info(cls).fields if _holds_any(f.type))
        if names:
            found[cls] = names
    return found


_FREE_FORM_FIELDS = _free_form_fields()

_UTC = datetime.timedelta(0)


def format_at(moment: datetime.datetime) -> str:
    """An input's `at` as a trace writes it: RFC 3339 UTC, `Z`, microseconds
    only when there are some."""
    text = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text.removesuffix(".000000") + "Z"


def decode_input(line: bytes | str) -> AnyInput:
    """Decode one trace line; raises msgspec.ValidationError / DecodeError.

    This is the edge: `at` must be UTC, nesting within `nesting_depth_max`,
    every integer within `integer_magnitude_max` and no key repeated in an
    object here. Stored inputs (decoded inside events) were checked when they
    arrived and are not checked again."""
    try:
        value = INPUT_DECODER.decode(line)
    except msgspec.DecodeError as error:
        raise lone_surrogate_error(line.encode() if isinstance(line, str) else line) or error from None
    except RecursionError:
        # Deeper than the interpreter's stack allows: find where, iteratively.
        path = too_deep_in_json(line.encode() if isinstance(line, str) else line)
        if path is None:
            raise  # not deep input: the caller's stack was already nearly full
        raise too_deep_error(path) from None
    fields = _FREE_FORM_FIELDS.get(type(value))
    # Only free-form fields can nest beyond the schema, and no deeper than the
    # line has opening brackets (C-speed counts: most lines skip the walk).
    if fields is not None and opening_brackets(line) > nesting_depth_max:
        for name in fields:
            path = too_deep_in_value(getattr(value, name), name)
            if path is not None:
                raise too_deep_error(path)
    if value.at.utcoffset() != _UTC:
        raise msgspec.ValidationError("`at` must be an RFC 3339 time in UTC (ending in Z or +00:00) - at `$.at`")
    raw = line.encode() if isinstance(line, str) else line
    refused = unbounded_integer_error(raw) or repeated_key_error(raw)
    if refused is not None:
        raise refused
    return value


def canonical_body(value: Input) -> bytes:
    """The body an idempotency key guards: everything but `at`, actor resolved."""
    return _ENCODER.encode(msgspec.structs.replace(value, at=_EPOCH, actor=value.sender, id=None))


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
