"""My own invariant and scenario, checked by Tandem's fuzzer and model checker.

Run: python -m pytest docs/examples/test_my_rules.py -q
"""

from tandem.domain import events as ev
from tandem.replay.proving import catalog, check, event_invariant, machine, machine_settings, state_invariant


@state_invariant
def success_needs_an_accepted_attempt(world):
    """Done means a worker did it: a succeeded action's last attempt was accepted."""
    for action in world.state.actions.by_id.values():
        if action.state == "succeeded" and (not action.attempts or action.attempts[-1].state != "accepted"):
            return f"{action.operation_id} succeeded without an accepted attempt"
    return None


@event_invariant
def unattended_claims_record_a_fresh_heartbeat(before, event, applying):
    """Facts before effects: an unattended claim records the heartbeat it relied on, and it was fresh."""
    if isinstance(event, ev.ActionClaimed) and before.actions.by_id[event.operation_id].unattended:
        seen = event.facts.heartbeat_at
        if seen is None or (applying.at - seen).total_seconds() > before.authority.config.watchdog_max_age_s:
            return f"{event.attempt_id} claimed unattended on heartbeat {seen}, at {applying.at}"
    return None


MINE = [*catalog(), success_needs_an_accepted_attempt, unattended_claims_record_a_fresh_heartbeat]

# Two proposals for the same cause (the lifecycle rule and the background)
# race the first one's receipts, its outcome and a cancel.
SCENARIO = {
    "description": "lifecycle + background same fix: one accepted managed operation",
    "setup": [
        {"type": "policy.set", "actor": "daemon", "allowed_operations": ["worker.start", "scm.push"], "write_roots": ["/repo"]},
        {"type": "conversation.open", "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1},
        {"type": "task.delegate", "task_id": "fix", "conversation_id": "fg", "message_refs": [], "goal": "fix CI", "done_when": ["CI green"],
         "grant": {"grant_id": "g-fix", "allowed_operations": ["worker.start", "scm.push"], "write_roots": ["/repo"]}},
    ],
    "moves": [
        {"name": "bg-proposes", "input": {"type": "action.propose", "actor": "background", "generation": 1, "operation_id": "op-bg",
            "cause_key": "ci:pr/7", "operation": "worker.start", "target": "pr/7", "resource": "wt-7", "task_id": "fix",
            "grant_id": "g-fix", "input_revisions": {"task": 1, "grant": 1}}},
        {"name": "human-proposes", "input": {"type": "action.propose", "actor": "human", "operation_id": "op-human", "cause_key": "ci:pr/7",
            "operation": "scm.push", "target": "pr/7", "resource": "wt-7", "task_id": "fix", "grant_id": "g-fix",
            "unattended": False, "input_revisions": {"task": 1, "grant": 1}}},
        {"name": "bg-accepted", "after": ["bg-proposes"], "input": {"type": "executor.receipt", "actor": "executor",
            "operation_id": "op-bg", "attempt_id": "op-bg/a1", "result": "accepted"}},
        {"name": "bg-succeeded", "after": ["bg-proposes"], "input": {"type": "executor.outcome", "actor": "executor",
            "operation_id": "op-bg", "outcome": "succeeded"}},
        {"name": "cancel-bg", "after": ["bg-proposes"], "input": {"type": "action.cancel", "operation_id": "op-bg"}},
        {"name": "ci-fails-again", "gap_s": 30, "input": {"type": "observe", "actor": "source", "source_id": "ci", "kind": "ci",
            "scope": "pr/7", "cause_key": "ci:pr/7", "fingerprint": "red-2", "complete": True}},
    ],
}


def test_my_scenario_in_every_order():
    result = check(SCENARIO, depth=4, invariants=MINE)
    assert result.counterexample is None, result.counterexample.message
    assert result.depth_reached == 4


# The stateful fuzzer with my invariants too (short budget; more with
# TANDEM_FUZZ_EXAMPLES / TANDEM_FUZZ_STEPS).
MyMachine = machine("MyMachine", invariants=MINE)
TestMyMachine = MyMachine.TestCase
TestMyMachine.settings = machine_settings(examples=10, steps=25)
