"""Narrowing authority (spec 3.1, 3.2): grants are what the human asked for
intersected with the policy; policy.set and grant.revise fence what is no
longer allowed and re-stamp the rest."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.authority.rules import normalise_path, path_allowed
from tests.unit.helpers import (
    action_state,
    at,
    blocked_by,
    delegate,
    given,
    grant_request,
    kinds,
    of_type,
    open_foreground,
    pause,
    policy,
    propose,
    rejection,
    resume,
    revalidate,
    revise_grant,
    tick,
    when,
    world,
)


def test_delegation_narrows_operations_and_normalises_write_roots():
    engine = given(policy(["worker.start", "worker.test"], ["/repo"]), open_foreground())
    request = grant_request(
        "g1",
        operations=["worker.start", "scm.push", "worker.start"],
        roots=["/repo/./backend", "/repo/x/../frontend", "relative/path", "/repo/../etc", "/etc", "/repo", "/repo/"],
    )
    events = when(engine, delegate("t1", grant=request))
    assert kinds(events) == ["InputAccepted", "GrantIssued", "TaskDelegated"]
    issued = events[1]
    assert (issued.grant_id, issued.revision, issued.task_id, issued.max_attempts) == ("g1", 1, "t1", 3)
    assert issued.allowed_operations == ["worker.start"]
    assert issued.dropped_operations == ["scm.push"]
    assert issued.write_roots == ["/repo/backend", "/repo/frontend", "/repo"]
    assert set(issued.dropped_roots) == {"relative/path", "/repo/../etc", "/etc"}
    assert engine.state.tasks.by_id["t1"].revision == 1 and engine.state.tasks.by_id["t1"].state == "active"


def test_a_write_path_is_checked_like_a_root():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", roots=["/repo/backend"])))
    assert rejection(when(engine, propose("op-1", task_id="t2", write_paths=["/repo/backend/../frontend/x"]))) == (
        "write_outside_roots"
    )
    assert rejection(when(engine, propose("op-1", task_id="t2", write_paths=["/repo/backend-2"]))) == (
        "write_outside_roots"
    )
    assert rejection(when(engine, propose("op-1", task_id="t2", write_paths=["/repo/backend/./src/../x"]))) is None


def test_path_helpers_collapse_dots_and_refuse_relative_paths():
    assert normalise_path("/repo/a/../b/./c") == "/repo/b/c"
    assert normalise_path("repo/a") is None
    assert normalise_path("//repo") == "/repo"
    assert path_allowed("/repo/a", ["/repo"], ["/"])
    assert not path_allowed("/repo/a", ["/repo"], ["/other"])  # the effective authority is the intersection


def test_a_wider_policy_later_gives_back_nothing_that_was_dropped():
    engine = given(policy(["worker.start"], ["/repo/a"]), open_foreground(), open_foreground("fg2"),
                   delegate("t1", grant=grant_request("g-t1", roots=["/repo/a", "/repo/b"])),
                   policy(["worker.start", "worker.test"], ["/repo"]))
    assert set(engine.state.authority.grants["g-t1"].operations) == set({"worker.start"})
    assert rejection(when(engine, propose("op-1", actor="human", operation="worker.test", write_paths=[]))) == (
        "operation_not_granted"
    )
    assert rejection(when(engine, propose("op-1", actor="human", write_paths=["/repo/b/x"]))) == "write_outside_roots"


def test_a_narrower_policy_later_narrows_every_grant():
    engine = given(world(), policy(["worker.start"], ["/repo/a"]))
    assert rejection(when(engine, propose("op-1", actor="human", operation="worker.test", write_paths=[]))) == (
        "operation_not_granted"
    )
    assert rejection(when(engine, propose("op-1", actor="human", write_paths=["/repo/b"]))) == "write_outside_roots"


def test_policy_set_fences_pending_actions_it_no_longer_allows_and_re_stamps_the_rest():
    engine = given(world(), pause("t1"),
                   propose("op-a", write_paths=["/repo/a"]),
                   propose("op-b", operation="worker.test", write_paths=["/repo/a"]),
                   propose("op-c", write_paths=["/repo/c"]))
    events = when(engine, policy(["worker.start"], ["/repo/a"]))
    (policy_set,) = of_type(events, ev.PolicySet)
    assert policy_set.revision == 2
    assert policy_set.fenced == ["op-b", "op-c"]
    assert policy_set.restamped == ["op-a"]
    assert [action_state(engine, op) for op in ("op-a", "op-b", "op-c")] == ["pending", "fenced", "fenced"]
    assert blocked_by(engine, "op-a") == ["scope_paused"]
    events = when(engine, resume("t1"))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert (claim.operation_id, claim.envelope.policy_revision) == ("op-a", 2)


def test_policy_set_re_stamps_fenced_actions_it_still_allows_and_they_stay_fenced():
    engine = given(world(), pause("t1"), propose("op-a"), policy(["worker.test"], ["/repo"]))
    assert action_state(engine, "op-a") == "fenced"
    events = when(engine, policy(["worker.start"], ["/repo"]))
    (policy_set,) = of_type(events, ev.PolicySet)
    assert (policy_set.fenced, policy_set.restamped) == ([], ["op-a"])
    assert action_state(engine, "op-a") == "fenced"
    events = when(engine, policy(["worker.test"], ["/repo"]))
    assert action_state(engine, "op-a") == "fenced"


def test_policy_set_leaves_in_flight_actions_alone():
    engine = given(world(), propose("op-1"))
    events = when(engine, policy(["worker.test"], ["/repo"]))
    (policy_set,) = of_type(events, ev.PolicySet)
    assert (policy_set.fenced, policy_set.restamped) == ([], [])
    assert action_state(engine, "op-1") == "submitting"


def test_grant_revise_fences_pending_actions_it_no_longer_allows_and_re_stamps_the_rest():
    engine = given(world(), pause("t1"),
                   propose("op-a", write_paths=["/repo/a"]),
                   propose("op-b", operation="worker.test", write_paths=["/repo/a"]))
    events = when(engine, revise_grant("g-t1", allowed_operations=["worker.start", "scm.push"]))
    (revised,) = of_type(events, ev.GrantRevised)
    assert (revised.revision, revised.allowed_operations, revised.dropped_operations) == (
        2, ["worker.start"], ["scm.push"])
    assert (revised.fenced, revised.restamped) == (["op-b"], ["op-a"])
    assert engine.state.actions.by_id["op-a"].revisions.grant == 2
    events = when(engine, resume("t1"))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert (claim.operation_id, claim.envelope.grant_revision) == ("op-a", 2)
    assert rejection(when(engine, revalidate("op-b", revisions={"task": 1, "grant": 2}))) == "operation_not_granted"


def test_grant_revise_narrows_against_the_current_policy():
    engine = given(world(), policy(["worker.start"], ["/repo"]))
    events = when(engine, revise_grant("g-t1", allowed_operations=["worker.start", "worker.test"],
                                       write_roots=["/repo/./x", "y", "/repo/../z"]))
    (revised,) = of_type(events, ev.GrantRevised)
    assert revised.allowed_operations == ["worker.start"]
    assert revised.write_roots == ["/repo/x"]
    assert set(revised.dropped_roots) == {"y", "/repo/../z"}


def test_effective_authority_is_the_grant_intersected_with_the_current_policy_at_proposal():
    engine = given(world(), tick(at=at(1)))
    assert rejection(when(engine, propose("op-1", write_paths=["/repo/src/../../etc"]))) == "write_outside_roots"


def test_a_grant_revise_of_limits_only_narrows_the_whole_grant_to_the_policy_now():
    """ "Narrowed like delegation": a revise narrows the grant's kept parts too,
    so no grant revision ever exceeds the policy revision it records."""
    engine = given(policy(["worker.start", "worker.test"], ["/repo"]), open_foreground(),
                   delegate("t1", grant=grant_request("g-t1", roots=["/repo/a", "/repo/b"])),
                   policy(["worker.start"], ["/repo/a"]))
    events = when(engine, revise_grant("g-t1", 1, max_attempts=5))
    assert rejection(events) is None
    revised = of_type(events, ev.GrantRevised)[0]
    assert (revised.allowed_operations, revised.dropped_operations) == (["worker.start"], ["worker.test"])
    assert (revised.write_roots, revised.dropped_roots) == (["/repo/a"], ["/repo/b"])
    assert revised.policy_revision == 2
    when(engine, policy(["worker.start", "worker.test"], ["/repo"]))
    assert set(engine.state.authority.grants["g-t1"].operations) == {"worker.start"}


def test_a_grant_revise_that_names_operations_narrows_them_to_the_policy_now():
    engine = given(policy(["worker.start", "worker.test"], ["/repo"]), open_foreground(),
                   delegate("t1", grant=grant_request("g-t1")),
                   policy(["worker.start"], ["/repo"]))
    events = when(engine, revise_grant("g-t1", 1, allowed_operations=["worker.start", "worker.test"]))
    revised = of_type(events, ev.GrantRevised)[0]
    assert revised.allowed_operations == ["worker.start"]
    assert revised.dropped_operations == ["worker.test"]
    assert rejection(when(engine, revise_grant("g-t1", 2, allowed_operations=["worker.test"]))) == "grant_outside_policy"


def test_a_grant_revise_with_nothing_surviving_the_policy_is_refused():
    engine = given(policy(["worker.start"], ["/repo"]), open_foreground(),
                   delegate("t1", grant=grant_request("g-t1", operations=["worker.start"])),
                   policy(["worker.test"], ["/repo"]))
    assert rejection(when(engine, revise_grant("g-t1", 1, max_attempts=5))) == "grant_outside_policy"
