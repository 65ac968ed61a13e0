"""The invariants catalog: what must hold after every input, whatever the order.

Each invariant is a small named function whose docstring names the RFC
guarantee it protects (docs/invariants.md lists them all). There are two
kinds:

- an **event invariant** `check(before, event, applying)` looks at one recorded
  event with the state it is applied to (`before`: the fold of every stored
  event up to it) and the input being applied (`applying`); it catches a wrong
  decision at the moment it is made (a claim while a question holds the
  action, a retry of an `unknown` attempt);
- a **state invariant** `check(world)` looks at the engine after an input:
  its live decision state and views, and the same folded again from the
  stored (encoded, decoded) events.

A check returns None when the invariant holds, else a sentence saying what
is wrong (an `AssertionError` raised inside it counts the same). The checks
recompute what they need from the facts in the state, not through
`domain.dispatch`, so a broken decision rule cannot hide behind itself.

The checks are in `event_invariants.py` and `state_invariants.py`, what they
are given in `model.py`. `Monitor` (monitor.py) runs a list of invariants
over an engine as inputs are applied; the fuzzer (fuzz.py), the bounded
checker (check.py) and the property tests all use it. Here: `catalog()`, the
built-in list plus whatever `register()` added; pass `invariants=[...]`
wherever a run takes one to choose exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from tandem.replay.proving.event_invariants import (
    alerts_raised_once_per_occurrence,
    attempts_follow_receipts,
    budget_usage_adds_up,
    budgets_never_exceeded,
    claims_respect_blockers,
    claims_under_current_authority,
    cursor_never_moves_backwards,
    deliveries_fit_the_context,
    fenced_generation_commits_nothing,
    grants_within_policy,
    heartbeat_never_fresher_than_its_beat,
    held_revision_not_resent,
    messages_sent_from_the_queue,
    no_claim_behind_source_revision,
    no_delivery_while_provider_unready,
    obligations_met_by_completed_turns,
    one_turn_at_a_time,
    stale_triage_is_refused,
    terminal_actions_never_change,
    unknown_is_never_retried,
)
from tandem.replay.proving.foreman_invariants import maintenance_yields_to_the_owner, preemption_is_scoped
from tandem.replay.proving.continuity_invariants import background_acts_only_reseeded, recovery_has_a_way_out
from tandem.replay.proving.model import Invariant
from tandem.replay.proving.tool_invariants import tools_within_admitted_allowlist
from tandem.replay.proving.composition_invariants import payload_frozen_before_acceptance
from tandem.replay.proving.state_invariants import (
    blocked_by_is_section_4,
    human_messages_kept,
    listings_match_rows,
    one_fix_per_batch,
    one_live_action_per_cause,
    reading_changes_nothing,
    restart_is_replay,
    unready_provider_is_the_deferral,
)
from tandem.replay.proving.wake_invariants import urgent_idle_not_held_by_interval

BUILTIN: tuple[Invariant, ...] = (
    terminal_actions_never_change,
    unknown_is_never_retried,
    attempts_follow_receipts,
    claims_respect_blockers,
    claims_under_current_authority,
    no_claim_behind_source_revision,
    grants_within_policy,
    tools_within_admitted_allowlist,
    background_acts_only_reseeded,
    budget_usage_adds_up,
    fenced_generation_commits_nothing,
    stale_triage_is_refused,
    one_turn_at_a_time,
    messages_sent_from_the_queue,
    held_revision_not_resent,
    deliveries_fit_the_context,
    cursor_never_moves_backwards,
    alerts_raised_once_per_occurrence,
    obligations_met_by_completed_turns,
    budgets_never_exceeded,
    heartbeat_never_fresher_than_its_beat,
    no_delivery_while_provider_unready,
    payload_frozen_before_acceptance,
    one_live_action_per_cause,
    one_fix_per_batch,
    # Before blocked_by_is_section_4: an owner_active block the scope does not allow is
    # reported by its own name (it also breaks the restated section 4 codes).
    preemption_is_scoped,
    blocked_by_is_section_4,
    human_messages_kept,
    unready_provider_is_the_deferral,
    maintenance_yields_to_the_owner,
    urgent_idle_not_held_by_interval,
    reading_changes_nothing,
    listings_match_rows,
    restart_is_replay,
    recovery_has_a_way_out,
)
_registered: list[Invariant] = []


def register(invariant: Invariant) -> Invariant:
    """Add an invariant to `catalog()` (for every later run that does not pass
    its own list). Returns it, so it stacks under @event_invariant or
    @state_invariant."""
    if not isinstance(invariant, Invariant):
        raise TypeError(f"{invariant!r} is not an Invariant (decorate it with @event_invariant or @state_invariant)")
    if invariant.name in {i.name for i in (*BUILTIN, *_registered) if i is not invariant}:
        raise ValueError(f"an invariant named {invariant.name!r} is already in the catalog")
    if invariant not in _registered:
        _registered.append(invariant)
    return invariant


def unregister(invariant: Invariant) -> None:
    if invariant in _registered:
        _registered.remove(invariant)


def catalog() -> list[Invariant]:
    """The built-in invariants, then the registered ones."""
    return [*BUILTIN, *_registered]


def by_name(names: Iterable[str]) -> list[Invariant]:
    known = {invariant.name: invariant for invariant in catalog()}
    missing = [name for name in names if name not in known]
    if missing:
        raise KeyError(f"no invariant named {', '.join(missing)}; known: {', '.join(known)}")
    return [known[name] for name in names]

