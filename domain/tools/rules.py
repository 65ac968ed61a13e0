"""Tool policy and runtime admission (contract v1.2 section 1): `tool_policy.set`,
`runtime.admit`, `tool.request`, and the gate on background inputs.

The engine holds an exact allowlist and read roots per role (`background`,
`worker`) under one tool policy revision. A runtime (a background's runner or
a worker profile) is admitted only with isolation evidence, no inherited
provider/MCP tools, and exact tools all in its role's allowlist, reading only
inside the policy's roots; a refusal is a rejection with consequences (the
runtime is refused, `isolation_unavailable:{runtime_id}` raised). The runner
asks before every tool call: an accepted `tool.request` is allowed, a rejected
one denied before execution (`tool_denied:{runtime_id}`). The invariant: no
tool outside the runtime's admitted tools and its role's current allowlist is
ever allowed (replay/proving: `tools_within_admitted_allowlist`).

Once a background tool policy is set, every input from actor `background`
needs an admitted runtime of the background it acts for, at its current
binding generation (`check_background_gates`, called by the deciders of
those kinds where the contract puts the check, with section 5.4's
`context_not_reseeded` right after, which admits a background's checkpoint
and investigation close while it is in context recovery: its way out); a
rebind fences the old runtime (the
reaction to `BackgroundBound`). A background's call may name one of its
investigations (contract v1.2 section 5.1): counted on it, denied once it is
exhausted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.alerts.rules import raise_alert, resolve_alert
from tandem.domain.authority.rules import inside_any, normalise_path, path_allowed
from tandem.domain.inputs import given
from tandem.domain.lifecycles import ACTION, IN_FLIGHT, INVESTIGATION, RUNTIME
from tandem.domain.lookups import known_conversation
from tandem.domain.reasons import Rejected
from tandem.domain.records import Conversation, Runtime, ToolPolicy
from tandem.domain.actions.state import charge_action_call
from tandem.domain.authority.state import charge_grant_call
from tandem.domain.investigations.state import charge_investigation_call
from tandem.domain.state import State

ISOLATION_ALERT = "isolation_unavailable"
DENIED_ALERT = "tool_denied"
_UNEXACT_CHARS = frozenset("*?[]{}")
# The action states in which a worker may call tools (contract v1.2 section 1.5, check 4).
CALLING_STATES = frozenset({"submitting", "queued", "accepted", "unknown"})
EXHAUSTED = INVESTIGATION.after[ev.InvestigationExhausted]  # its calls are denied budget_exhausted (section 5.1)


def is_exact(tool: str) -> bool:
    """An exact tool name: no wildcard, no server alone, no prefix (section 1)."""
    if not tool or any(ch.isspace() or ch in _UNEXACT_CHARS for ch in tool) or tool[-1] in "/:":
        return False
    if tool.startswith("mcp:"):
        server, slash, name = tool[4:].partition("/")
        return bool(server and slash and name)
    return True


def binding_generation(state: State, background_id: str | None) -> int | None:
    """The generation a background is bound at now, or None if it is not bound."""
    background = state.conversation.by_id.get(background_id or "")
    if background is None or background.role != "background":
        return None
    foreground = state.conversation.by_id.get(background.foreground_id or "")
    if foreground is None or foreground.background_id != background_id:
        return None
    return foreground.generation


def runtime_admitted(state: State, runtime: Runtime) -> bool:
    """Admitted, and (a background's) at its background's current binding generation."""
    if runtime.state != "admitted":
        return False
    return runtime.role != "background" or runtime.generation == binding_generation(state, runtime.conversation_id)


def admitted_background(state: State, background_id: str | None) -> Runtime | None:
    """The background's runtime admitted at its current binding generation, if any."""
    for runtime_id in sorted(state.tools.runtimes):
        runtime = state.tools.runtimes[runtime_id]
        if runtime.conversation_id == background_id and runtime.role == "background" and runtime_admitted(state, runtime):
            return runtime
    return None


def check_background_gates(state: State, value: inp.Input, background_ids: Iterable[str | None]) -> None:
    """Section 1.3: once a background tool policy is set, a `background` input
    needs one of the backgrounds it acts for to have an admitted runtime; and
    (contract v1.2 section 5.4, right after) one of those to be reseeded
    since its last context reset, if that reset made a reseed due."""
    if value.sender != "background":
        return
    named = [background_id for background_id in background_ids if background_id is not None]
    if "background" in state.tools.policies:
        named = [background_id for background_id in named if admitted_background(state, background_id) is not None]
        if not named:
            which = ", ".join(repr(name) for name in background_ids if name is not None) or "no bound background"
            raise Rejected(
                "runtime_not_admitted",
                f"{which}: no runtime admitted at the current binding generation (tool policy revision {state.tools.policy_revision})",
            )
    if named and all(_gated(state.conversation.by_id[background_id], value) for background_id in named):
        background = state.conversation.by_id[named[0]]
        raise Rejected(
            "context_not_reseeded",
            f"{named[0]!r}: its epoch {background.epoch} reseed is not accepted ({_reseed_state(background)})",
        )


def _gated(background: Conversation, value: inp.Input) -> bool:
    """Not reseeded, and (section 5.4's Decision) not one of the inputs that
    are its way out of context recovery."""
    return background.unreseeded and not (background.recovery == "reseed" and isinstance(value, RECOVERY_WAY_OUT))


def _reseed_state(background: Conversation) -> str:
    if background.recovery == "reseed":
        checkpoint = background.checkpoint
        counts = f"; its checkpoint {checkpoint.checkpoint_id} counts {checkpoint.tokens}" if checkpoint is not None else ""
        return (
            f"context recovery required: the reseed's required part {background.recovery_needed} tokens exceeds its room "
            f"{background.recovery_room} (context_limit {background.context_limit} - reserve {background.reserve}){counts}; "
            f"only {' and '.join(RECOVERY_WAY_OUT_KINDS)} are admitted, and the reseed is made once the required part fits"
        )
    if background.reseed_id is None:
        return "none made yet"
    return f"{background.reseed_id} is {background.deliveries[background.reseed_id].attempt_state}"


def _policy(state: State, role: str) -> ToolPolicy:
    """The role's tool policy; before any `tool_policy.set` for it, empty (fail closed)."""
    return state.tools.policies.get(role) or ToolPolicy()


def _normalised_roots(roots: Iterable[str]) -> list[str]:
    """Absolute roots, normalised, each once (a relative one is dropped: section 1.1)."""
    kept: list[str] = []
    for root in roots:
        normalised = normalise_path(root)
        if normalised is not None and normalised not in kept:
            kept.append(normalised)
    return kept


def _outside(paths: Iterable[str], *root_sets: Iterable[str]) -> str | None:
    """The first path not inside one root of every set (a relative one is never inside)."""
    sets = [tuple(roots) for roots in root_sets]
    for path in paths:
        normalised = normalise_path(path)
        if normalised is None or not all(inside_any(normalised, roots) for roots in sets):
            return path
    return None


def _revoked_because(runtime: Runtime, policy: ToolPolicy, revision: int) -> ev.ToolFacts | None:
    """Why a narrower policy no longer allows an admitted runtime, or None."""
    missing = next((tool for tool in runtime.tools if tool not in policy.tools), None)
    if missing is not None:
        return ev.ToolFacts(check="tool_not_allowed", tool_policy_revision=revision, entry=missing, in_allowlist=False)
    outside = _outside(runtime.read_roots, policy.read_roots)
    if outside is not None:
        return ev.ToolFacts(check="read_outside_roots", tool_policy_revision=revision, entry=outside)
    return None


# ----------------------------------------------------------------- deciders


def decide_tool_policy(state: State, value: inp.SetToolPolicy, seq: int) -> list[ev.Event]:
    for tool in value.allowed_tools:
        if not is_exact(tool):
            raise Rejected("tool_not_exact", f"{tool!r} is not an exact tool name (no wildcard, server or prefix)")
    revision = state.tools.policy_revision + 1
    policy = ToolPolicy(frozenset(value.allowed_tools), tuple(_normalised_roots(value.read_roots)))
    revoked: list[str] = []
    restamped: list[str] = []
    because: dict[str, ev.ToolFacts] = {}
    for runtime_id in sorted(state.tools.runtimes):
        runtime = state.tools.runtimes[runtime_id]
        if runtime.state != "admitted":
            continue
        why = _revoked_because(runtime, policy, revision) if runtime.role == value.role else None
        if why is None:
            restamped.append(runtime_id)
        else:
            revoked.append(runtime_id)
            because[runtime_id] = why
    return [
        ev.ToolPolicySet(
            cause=seq,
            revision=revision,
            role=value.role,
            allowed_tools=list(dict.fromkeys(value.allowed_tools)),
            read_roots=list(policy.read_roots),
            revoked=revoked,
            restamped=restamped,
            revoked_because=because,
        )
    ]


def _check_admission_identity(state: State, value: inp.AdmitRuntime) -> None:
    """Checks 1-4 of `runtime.admit`: they refuse the input only."""
    conversation_id = given(value.conversation_id)
    if value.role == "background":
        known_conversation(state, conversation_id, "background")
    known = state.tools.runtimes.get(value.runtime_id)
    if known is not None and (known.role != value.role or known.conversation_id != conversation_id):
        raise Rejected(
            "already_exists", f"runtime {value.runtime_id!r} is known as {known.role} of {known.conversation_id!r}"
        )
    if value.role == "background":
        bound = binding_generation(state, conversation_id)
        if bound is None or value.generation != bound:
            raise Rejected("generation_fenced", f"generation {value.generation} is not {conversation_id!r}'s binding ({bound})")
    if value.tool_policy_revision != state.tools.policy_revision:
        raise Rejected(
            "stale_revision",
            f"the tool policy is at revision {state.tools.policy_revision}, not {value.tool_policy_revision}",
        )


def admission_refusal(state: State, value: inp.AdmitRuntime) -> ev.ToolFacts | None:
    """Checks 5-9 of `runtime.admit`, in order: the first that fails, or None."""
    revision = state.tools.policy_revision
    ref = given(value.isolation_test_ref)
    if ref is None:
        return ev.ToolFacts(check="isolation_unavailable", tool_policy_revision=revision)
    if value.inherited_tools:
        return ev.ToolFacts(
            check="tools_inherited", tool_policy_revision=revision, entry=value.inherited_tools[0], isolation_test_ref=ref
        )
    not_exact = next((tool for tool in value.tools if not is_exact(tool)), None)
    if not_exact is not None:
        return ev.ToolFacts(check="tool_not_exact", tool_policy_revision=revision, entry=not_exact, isolation_test_ref=ref)
    policy = _policy(state, value.role)
    missing = next((tool for tool in value.tools if tool not in policy.tools), None)
    if missing is not None:
        return ev.ToolFacts(
            check="tool_not_allowed", tool_policy_revision=revision, entry=missing, isolation_test_ref=ref, in_allowlist=False
        )
    outside = _outside(value.read_roots, policy.read_roots)
    if outside is not None:
        return ev.ToolFacts(check="read_outside_roots", tool_policy_revision=revision, entry=outside, isolation_test_ref=ref)
    return None


_REFUSAL_TEXT = {
    "isolation_unavailable": "no isolation test evidence (a capability flag alone is not enforcement)",
    "tools_inherited": "it would inherit provider/MCP tool {entry!r}",
    "tool_not_exact": "{entry!r} is not an exact tool name",
    "tool_not_allowed": "{entry!r} is not in the {role} allowlist at tool policy revision {revision}",
    "read_outside_roots": "read root {entry!r} is outside the {role} read roots at tool policy revision {revision}",
}


def decide_admission(state: State, value: inp.AdmitRuntime, seq: int) -> list[ev.Event]:
    _check_admission_identity(state, value)
    profile: dict[str, Any] = {
        "runtime_id": value.runtime_id,
        "role": value.role,
        "conversation_id": given(value.conversation_id),
        "generation": given(value.generation),
        "adapter": value.adapter,
        "tool_policy_revision": state.tools.policy_revision,
        "tools": list(dict.fromkeys(value.tools)),
    }
    refusal = admission_refusal(state, value)
    if refusal is not None:
        text = _REFUSAL_TEXT[refusal.check].format(entry=refusal.entry, role=value.role, revision=refusal.tool_policy_revision)
        refused = ev.RuntimeRefused(cause=seq, **profile, reason=refusal.check, facts=refusal)
        raise Rejected(refusal.check, f"runtime {value.runtime_id!r}: {text}", consequences=[refused])  # type: ignore[arg-type]
    return [
        ev.RuntimeAdmitted(
            cause=seq,
            **profile,
            read_roots=_normalised_roots(value.read_roots),
            isolation_test_ref=value.isolation_test_ref,  # type: ignore[arg-type]
        )
    ]


def _check_worker_call(state: State, runtime: Runtime, value: inp.RequestTool) -> tuple[str, str] | None:
    """Check 4 for a worker: the action it executes, naming it, in flight."""
    operation_id = given(value.operation_id)
    action = state.actions.by_id.get(operation_id) if operation_id is not None else None
    if action is None:
        return "unknown_operation", f"no operation {operation_id!r} for worker runtime {runtime.runtime_id!r}"
    if action.runtime_id != runtime.runtime_id:
        return "runtime_not_admitted", f"{operation_id!r} names runtime {action.runtime_id!r}, not {runtime.runtime_id!r}"
    if action.state not in CALLING_STATES:
        return "stale_attempt", f"{operation_id!r} is {action.state}: it calls nothing"
    return None


def _check_investigation(state: State, runtime: Runtime, value: inp.RequestTool) -> str | None:
    """Check 4 for a background (contract v1.2 section 5.1): the investigation
    it names is one of its background's, and not closed."""
    investigation_id = given(value.investigation_id)
    if investigation_id is None:
        return None
    investigation = state.investigations.by_id.get(investigation_id)
    if investigation is None or investigation.conversation_id != runtime.conversation_id:
        return "unknown_investigation"
    return "not_open" if investigation.state in INVESTIGATION.terminal else None


def call_denial(state: State, runtime: Runtime, value: inp.RequestTool) -> ev.ToolFacts | None:
    """Checks 3-8 of `tool.request`, in order: why the call is denied, or None (allowed)."""
    revision = state.tools.policy_revision
    facts = {"tool_policy_revision": revision, "admitted_revision": runtime.tool_policy_revision}
    if not runtime_admitted(state, runtime):
        return ev.ToolFacts(check="runtime_not_admitted", entry=runtime.state, **facts)
    if runtime.role == "worker":
        failed = _check_worker_call(state, runtime, value)
        if failed is not None:
            return ev.ToolFacts(check=failed[0], entry=given(value.operation_id), **facts)
    else:
        code = _check_investigation(state, runtime, value)
        if code is not None:
            return ev.ToolFacts(check=code, entry=given(value.investigation_id), **facts)
    policy = _policy(state, runtime.role)
    in_admission, in_allowlist = value.tool in runtime.tools, value.tool in policy.tools
    if not (in_admission and in_allowlist):
        return ev.ToolFacts(
            check="tool_not_allowed", entry=value.tool, in_admission=in_admission, in_allowlist=in_allowlist, **facts
        )
    outside = _outside(value.read_paths, runtime.read_roots, policy.read_roots)
    if outside is not None:
        return ev.ToolFacts(check="read_outside_roots", entry=outside, **facts)
    if runtime.role == "background":
        if value.write_paths:
            return ev.ToolFacts(check="write_outside_roots", entry=value.write_paths[0], **facts)
        return _investigation_exhausted(state, value, facts)
    grant = state.authority.grants[state.actions.by_id[value.operation_id].grant_id]  # type: ignore[index]
    escaping = next((p for p in value.write_paths if not path_allowed(p, grant.roots, state.authority.policy.roots)), None)
    if escaping is not None:
        return ev.ToolFacts(check="write_outside_roots", entry=escaping, **facts)
    if grant.budget_exhausted:  # check 8 (contract v1.2 section 3.4)
        return ev.ToolFacts(
            check="budget_exhausted", entry=grant.grant_id, calls=grant.calls, call_limit=grant.call_limit,
            usage=grant.usage, token_limit=grant.token_limit, **facts,
        )  # fmt: skip
    return None


def _investigation_exhausted(state: State, value: inp.RequestTool, facts: dict[str, Any]) -> ev.ToolFacts | None:
    """Check 8 for a background: the investigation it names is exhausted, or
    reaches its due time with this very input (section 5.1: its time rule
    runs in the pass after the input's own events)."""
    investigation = state.investigations.by_id.get(given(value.investigation_id) or "")
    if investigation is None or not (investigation.state == EXHAUSTED or value.at >= investigation.due_at):
        return None
    return ev.ToolFacts(
        check="budget_exhausted", entry=investigation.investigation_id, calls=investigation.calls,
        investigation_calls_max=state.authority.config.investigation_calls_max, due_at=investigation.due_at, **facts,
    )  # fmt: skip


def _named_investigation(state: State, runtime: Runtime, value: inp.RequestTool) -> Any:
    """The investigation a background's call names, as its events record it
    (UNSET: none, or one that does not exist, or a worker's call)."""
    investigation_id = given(value.investigation_id)
    if runtime.role != "background" or investigation_id not in state.investigations.by_id:
        return UNSET
    return investigation_id


def _exhausted_by_call(state: State, investigation_id: Any, seq: int) -> list[ev.Event]:
    """The allowed call that brings an open investigation's calls to
    investigation_calls_max exhausts it (section 5.1)."""
    if investigation_id is UNSET:
        return []
    investigation = state.investigations.by_id[investigation_id]
    calls, calls_max = investigation.calls + 1, state.authority.config.investigation_calls_max
    if investigation.state != "open" or calls < calls_max:
        return []
    return [
        ev.InvestigationExhausted(
            cause=seq, investigation_id=investigation_id, conversation_id=investigation.conversation_id, by="calls",
            due_at=investigation.due_at, calls=calls, calls_max=calls_max,
        )
    ]  # fmt: skip


def _stopped_by_budget(state: State, denied: ev.ToolCallDenied) -> list[ev.Event]:
    """A worker denied `budget_exhausted` is asked to stop if in flight (section 1.5)."""
    action = state.actions.by_id.get(denied.operation_id) if denied.operation_id is not None else None
    if denied.reason != "budget_exhausted" or action is None:
        return []
    if action.state not in IN_FLIGHT or not ACTION.allows(action.state, "request_cancel"):
        return []
    return [ev.ActionCancelRequested(cause=denied.cause, operation_id=action.operation_id, reason="budget_exhausted")]


def decide_tool_request(state: State, value: inp.RequestTool, seq: int) -> list[ev.Event]:
    runtime = state.tools.runtimes.get(value.runtime_id)
    if runtime is None:
        raise Rejected("unknown_runtime", f"no runtime {value.runtime_id!r}")
    if value.call_id in runtime.call_ids:
        raise Rejected("already_exists", f"call {value.call_id!r} was already asked for runtime {value.runtime_id!r}")
    operation_id = given(value.operation_id) if runtime.role == "worker" else None
    investigation_id = _named_investigation(state, runtime, value)
    denial = call_denial(state, runtime, value)
    if denial is not None:
        denied = ev.ToolCallDenied(
            cause=seq,
            runtime_id=runtime.runtime_id,
            call_id=value.call_id,
            tool=value.tool,
            operation_id=operation_id if operation_id in state.actions.by_id else None,
            reason=denial.check,
            facts=denial,
            investigation_id=investigation_id,
        )
        detail = f"denied before execution: {denial.check} ({denial.entry!r}, tool policy revision {denial.tool_policy_revision})"
        consequences = [denied, *_stopped_by_budget(state, denied)]
        raise Rejected(denial.check, detail, consequences=consequences)  # type: ignore[arg-type]
    return [
        ev.ToolCallAllowed(
            cause=seq,
            runtime_id=runtime.runtime_id,
            call_id=value.call_id,
            tool=value.tool,
            operation_id=operation_id,
            tool_policy_revision=state.tools.policy_revision,
            investigation_id=investigation_id,
        ),
        *_exhausted_by_call(state, investigation_id, seq),
    ]


# ----------------------------------------------------------------- reactions


def _alert_facts(runtime_id: str, reason: str) -> ev.AlertFacts:
    return ev.AlertFacts(reason=reason, runtime_id=runtime_id)


def _on_runtime_refused(state: State, event: ev.RuntimeRefused) -> list[ev.Event]:
    assert state.last_at is not None
    detail = f"{event.reason}" + (f": {event.facts.entry}" if event.facts.entry else "")
    alert_id = f"{ISOLATION_ALERT}:{event.runtime_id}"
    return raise_alert(state, event.cause, alert_id, state.last_at, detail=detail, facts=_alert_facts(event.runtime_id, event.reason))


def _on_tool_policy_set(state: State, event: ev.ToolPolicySet) -> list[ev.Event]:
    assert state.last_at is not None
    raised: list[ev.Event] = []
    for runtime_id in event.revoked:
        why = event.revoked_because[runtime_id]
        detail = f"revoked at tool policy revision {event.revision}: {why.check}: {why.entry}"
        facts = _alert_facts(runtime_id, why.check)
        raised += raise_alert(state, event.cause, f"{ISOLATION_ALERT}:{runtime_id}", state.last_at, detail=detail, facts=facts)
    return raised


def _on_runtime_admitted(state: State, event: ev.RuntimeAdmitted) -> list[ev.Event]:
    detail = f"{event.runtime_id} admitted at tool policy revision {event.tool_policy_revision}"
    alert_id = f"{ISOLATION_ALERT}:{event.runtime_id}"
    return resolve_alert(state, event.cause, alert_id, detail=detail, facts=_alert_facts(event.runtime_id, "admitted"))


def _on_tool_call_denied(state: State, event: ev.ToolCallDenied) -> list[ev.Event]:
    assert state.last_at is not None
    detail = f"{event.call_id} {event.tool}: {event.reason}"
    alert_id = f"{DENIED_ALERT}:{event.runtime_id}"
    facts = _alert_facts(event.runtime_id, event.reason)
    return raise_alert(state, event.cause, alert_id, state.last_at, new_occurrence=True, detail=detail, facts=facts)


def _on_tool_call_allowed(state: State, event: ev.ToolCallAllowed) -> list[ev.Event]:
    """The call that brings its grant's calls to `call_limit` raises the alert (section 3.4)."""
    if event.operation_id is None:
        return []
    grant = state.authority.grants[state.actions.by_id[event.operation_id].grant_id]
    if grant.call_limit is None or grant.calls != grant.call_limit:
        return []
    assert state.last_at is not None
    facts = ev.AlertFacts(
        grant_id=grant.grant_id, calls=grant.calls, call_limit=grant.call_limit, operation_id=event.operation_id
    )
    detail = f"calls {grant.calls} reached call_limit {grant.call_limit}"
    return raise_alert(state, event.cause, f"budget_exhausted:{grant.grant_id}", state.last_at, detail=detail, facts=facts)


def _on_background_bound(state: State, event: ev.BackgroundBound) -> list[ev.Event]:
    """A rebind fences every admitted background runtime no longer at its binding."""
    return [
        ev.RuntimeFenced(
            cause=event.cause,
            runtime_id=runtime_id,
            conversation_id=runtime.conversation_id or "",
            foreground_id=event.foreground_id,
            generation=event.generation,
        )
        for runtime_id, runtime in sorted(state.tools.runtimes.items())
        if runtime.role == "background" and runtime.state == "admitted" and not runtime_admitted(state, runtime)
    ]


# ----------------------------------------------------------------- evolvers


def _tool_policy_set(state: State, event: ev.ToolPolicySet) -> None:
    state.tools.policy_revision = event.revision
    state.tools.policies[event.role] = ToolPolicy(frozenset(event.allowed_tools), tuple(event.read_roots))
    revoked = RUNTIME.after[ev.ToolPolicySet]
    for runtime_id in event.revoked:
        runtime = state.tools.runtimes[runtime_id]
        runtime.state, runtime.reason = revoked, event.revoked_because[runtime_id].check
        state.touch_runtime(runtime_id)
    for runtime_id in event.restamped:
        state.tools.runtimes[runtime_id].tool_policy_revision = event.revision


def _profile(state: State, event: ev.RuntimeAdmitted | ev.RuntimeRefused) -> Runtime:
    runtime = state.tools.runtimes.get(event.runtime_id)
    if runtime is None:
        runtime = Runtime(
            event.runtime_id, event.role, event.conversation_id, event.generation, event.adapter,
            event.tool_policy_revision, tuple(event.tools), (),
        )  # fmt: skip
        state.tools.runtimes[event.runtime_id] = runtime
    runtime.generation, runtime.adapter = event.generation, event.adapter
    runtime.tool_policy_revision, runtime.tools = event.tool_policy_revision, tuple(event.tools)
    state.touch_runtime(event.runtime_id)
    return runtime


def _runtime_admitted(state: State, event: ev.RuntimeAdmitted) -> None:
    runtime = _profile(state, event)
    runtime.read_roots = tuple(event.read_roots)
    runtime.state, runtime.reason = RUNTIME.after[ev.RuntimeAdmitted], None


def _runtime_refused(state: State, event: ev.RuntimeRefused) -> None:
    runtime = _profile(state, event)
    runtime.read_roots = ()  # the refused profile reads nothing the engine vouches for
    runtime.state, runtime.reason = RUNTIME.after[ev.RuntimeRefused], event.reason


def _runtime_fenced(state: State, event: ev.RuntimeFenced) -> None:
    state.tools.runtimes[event.runtime_id].state = RUNTIME.after[ev.RuntimeFenced]
    state.touch_runtime(event.runtime_id)


def _tool_call_allowed(state: State, event: ev.ToolCallAllowed) -> None:
    runtime = state.tools.runtimes[event.runtime_id]
    runtime.calls_allowed += 1
    runtime.call_ids.add(event.call_id)
    if event.investigation_id is not UNSET:
        charge_investigation_call(state, event.investigation_id)
    if event.operation_id is not None:
        action = charge_action_call(state, event.operation_id)
        if charge_grant_call(state, action.grant_id):
            state.touch_grant(action.grant_id)


def _tool_call_denied(state: State, event: ev.ToolCallDenied) -> None:
    runtime = state.tools.runtimes[event.runtime_id]
    runtime.calls_denied += 1
    runtime.call_ids.add(event.call_id)


DECIDERS = {
    inp.SetToolPolicy: decide_tool_policy,
    inp.AdmitRuntime: decide_admission,
    inp.RequestTool: decide_tool_request,
}
EVOLVERS = {
    ev.ToolPolicySet: _tool_policy_set,
    ev.RuntimeAdmitted: _runtime_admitted,
    ev.RuntimeRefused: _runtime_refused,
    ev.RuntimeFenced: _runtime_fenced,
    ev.ToolCallAllowed: _tool_call_allowed,
    ev.ToolCallDenied: _tool_call_denied,
}
REACTIONS = {
    ev.ToolPolicySet: _on_tool_policy_set,
    ev.RuntimeRefused: _on_runtime_refused,
    ev.RuntimeAdmitted: _on_runtime_admitted,
    ev.ToolCallDenied: _on_tool_call_denied,
    ev.ToolCallAllowed: _on_tool_call_allowed,
    ev.BackgroundBound: _on_background_bound,
}

# The inputs of a background in context recovery that are admitted (contract v1.2 section 5.4's
# Decision): a checkpoint and an investigation's close, through which the reseed's required part shrinks.
RECOVERY_WAY_OUT = (inp.CheckpointBackground, inp.CloseInvestigation)
RECOVERY_WAY_OUT_KINDS = tuple(kind.__struct_config__.tag for kind in RECOVERY_WAY_OUT)
