"""Tool policy and runtimes (contract v1.2 section 1): `tool_policy.set`,
`runtime.admit` and `tool.request`, drawn over a small universe of tools
(exact ones, and the non-exact kinds the contract refuses), runtimes and
paths; mostly what would be admitted or allowed, sometimes what must not."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tandem.replay.proving.generators.universe import POLICY_ROOTS, WRITE_PATHS, Builder, Draw, often, revision_near, subset

TOOLS = ("tandem:read_evidence", "mcp:github/get_pull_request", "shell:exec", "fs:write")
NOT_EXACT = ("mcp:github", "shell:*", "fs:")
INHERITED = ("mcp:github/create_pull_request",)
RUNTIME_IDS = ("bg-r1", "w-r1", "w-r2")
READ_PATHS = ("/repo/a/f", "/repo/.git", "/srv/x/y", "/etc/passwd", "/repo/../etc/z", "relative")
IN_FLIGHT_CALLING = ("submitting", "queued", "accepted", "unknown")


def _role(runtime_id: str) -> str:
    return "background" if runtime_id.startswith("bg") else "worker"


def tool_policy_set(draw: Draw, b: Builder) -> dict[str, Any]:
    role = "worker" if often(draw, 6) else "background"
    tools = subset(draw, TOOLS, 1) if often(draw) else [*subset(draw, TOOLS), draw(st.sampled_from(NOT_EXACT))]
    roots = ["/repo", "/srv"] if often(draw, 5) else subset(draw, (*POLICY_ROOTS, "relative"), 1)
    return b.line("tool_policy.set", draw(st.sampled_from(["daemon", "human"])), role=role, allowed_tools=tools, read_roots=roots)


def runtime_admit(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    runtime_id = draw(st.sampled_from(RUNTIME_IDS))
    role = _role(runtime_id) if often(draw) else draw(st.sampled_from(["background", "worker"]))
    policy = state.tools.policies.get(role)
    allowed = sorted(policy.tools) if policy is not None and policy.tools else list(TOOLS)
    fields: dict[str, Any] = {
        "runtime_id": runtime_id,
        "role": role,
        "adapter": draw(st.sampled_from(["codex", "claude"])),
        "tool_policy_revision": revision_near(draw, state.tools.policy_revision),
        "tools": subset(draw, allowed, 1) if often(draw, 8) else subset(draw, (*TOOLS, *NOT_EXACT), 1),
        "read_roots": list(policy.read_roots) if policy is not None and policy.read_roots and often(draw, 8)
        else subset(draw, POLICY_ROOTS, 1),
    }
    if role == "background":
        fields["conversation_id"] = "bg"
        fields["generation"] = b.generation() if often(draw) else b.generation() - 1
    if not often(draw, 8):
        fields["inherited_tools"] = list(INHERITED)
    if often(draw, 8):
        fields["isolation_test_ref"] = f"ev/iso-{runtime_id}"
    return b.line("runtime.admit", "daemon", **fields)


def tool_request(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    known = sorted(state.tools.runtimes)
    runtime_id = draw(st.sampled_from(known)) if known and often(draw) else draw(st.sampled_from(RUNTIME_IDS))
    runtime = state.tools.runtimes.get(runtime_id)
    asked = sorted(runtime.call_ids) if runtime is not None else []
    call_id = draw(st.sampled_from(asked)) if asked and not often(draw) else f"c{len(b.lines) + 1}"
    tools = list(runtime.tools) if runtime is not None and runtime.tools else list(TOOLS)
    fields: dict[str, Any] = {
        "runtime_id": runtime_id,
        "call_id": call_id,
        "tool": draw(st.sampled_from(tools)) if often(draw, 7) else draw(st.sampled_from(TOOLS)),
    }
    if often(draw, 4):
        fields["read_paths"] = subset(draw, READ_PATHS, 1)[:2]
    if runtime is not None and runtime.role == "worker":
        mine = sorted(op for op, a in state.actions.by_id.items() if a.runtime_id == runtime_id and a.state in IN_FLIGHT_CALLING)
        if mine or state.actions.by_id:
            fields["operation_id"] = draw(st.sampled_from(mine)) if mine and often(draw) else draw(st.sampled_from(sorted(state.actions.by_id)))
        if often(draw, 4):
            fields["write_paths"] = [draw(st.sampled_from(WRITE_PATHS))]
    else:
        if not often(draw, 9):
            fields["write_paths"] = [draw(st.sampled_from(WRITE_PATHS))]
        if state.investigations.by_id and often(draw, 6):  # contract v1.2 section 5.1: counted on an investigation
            fields["investigation_id"] = draw(st.sampled_from([*sorted(state.investigations.by_id), "inv-unknown"]))
    return b.line("tool.request", "daemon", **fields)


def worker_runtime(draw: Draw, b: Builder) -> str | None:
    """For a proposal: a worker runtime to name, when there is one (no draw otherwise)."""
    workers = sorted(r for r, runtime in b.state.tools.runtimes.items() if runtime.role == "worker")
    if not workers or not often(draw, 5):
        return None
    return draw(st.sampled_from([*workers, "w-unknown"])) if not often(draw) else draw(st.sampled_from(workers))


WORKER_RUNTIMES = tuple(r for r in RUNTIME_IDS if _role(r) == "worker")


def worker_admit(draw: Draw, b: Builder) -> dict[str, Any]:
    """What a worker needs to call tools: a worker tool policy if there is
    none, else an admission that passes (a worker runtime, at the current
    revision, with the policy's tools and roots and isolation evidence),
    preferably of a worker not admitted yet."""
    state = b.state
    policy = state.tools.policies.get("worker")
    if policy is None or not policy.tools:
        return b.line("tool_policy.set", "daemon", role="worker", allowed_tools=subset(draw, TOOLS, 1), read_roots=["/repo", "/srv"])
    unadmitted = [r for r in WORKER_RUNTIMES if r not in state.tools.runtimes or state.tools.runtimes[r].state != "admitted"]
    runtime_id = draw(st.sampled_from(unadmitted)) if unadmitted and often(draw, 8) else draw(st.sampled_from(WORKER_RUNTIMES))
    return b.line(
        "runtime.admit",
        "daemon",
        runtime_id=runtime_id,
        role="worker",
        adapter=draw(st.sampled_from(["codex", "claude"])),
        tool_policy_revision=state.tools.policy_revision,
        tools=subset(draw, sorted(policy.tools), 1),
        read_roots=list(policy.read_roots),
        isolation_test_ref=f"ev/iso-{runtime_id}",
    )


def worker_call(draw: Draw, b: Builder) -> dict[str, Any]:
    """A worker's tool call for the action it executes while that action is
    in flight (contract v1.2 sections 1.5, 3.4): an admitted tool the worker
    allowlist has, no path: allowed until its grant reaches `call_limit`,
    denied `budget_exhausted` after. Any tool call while no worker calls."""
    state = b.state
    calling = sorted(
        (op, a.runtime_id) for op, a in state.actions.by_id.items()
        if a.runtime_id in state.tools.runtimes and a.state in IN_FLIGHT_CALLING and state.tools.runtimes[a.runtime_id].state == "admitted"
    )  # fmt: skip
    if not calling:
        return tool_request(draw, b)
    operation_id, runtime_id = draw(st.sampled_from(calling))
    runtime = state.tools.runtimes[runtime_id]
    policy = state.tools.policies.get("worker")
    tools = sorted(t for t in runtime.tools if policy is not None and t in policy.tools) or sorted(runtime.tools) or list(TOOLS)
    return b.line(
        "tool.request", "daemon", runtime_id=runtime_id, call_id=f"c{len(b.lines) + 1}", tool=draw(st.sampled_from(tools)),
        operation_id=operation_id,
    )  # fmt: skip
