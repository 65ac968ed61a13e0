"""A synchronize (a pull request's new head commit) fences a claimed repair
for the old head (issue 26; docs/contract/actions.md, the source rule), on
fixtures/traces/github_synchronize_fences_repair.jsonl: its observations are,
byte for byte, lines that `tandem github convert` wrote from real payloads
(fixtures/traces/github_events.jsonl)."""

from __future__ import annotations

from pathlib import Path

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.domain import events as ev
from tandem.replay.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
FIXTURE = TRACES / "github_synchronize_fences_repair.jsonl"
PR2 = "pull_request:https://github.com/Codertocat/Hello-World/pull/2"


def _events() -> list[ev.Event]:
    engine = Engine(open_store("memory:"))
    ingest(engine, parse_trace(FIXTURE.read_bytes(), FIXTURE.name))
    return [event for _, event in engine.store.read()]


def test_its_observations_are_the_converted_deliveries_byte_for_byte() -> None:
    converted = set((TRACES / "github_events.jsonl").read_bytes().splitlines())
    observed = [line for line in FIXTURE.read_bytes().splitlines() if b'"type":"observe"' in line]
    assert len(observed) == 3 and all(line in converted for line in observed)


def test_a_synchronize_fences_the_repair_claimed_for_the_old_head() -> None:
    events = _events()
    heads = [(e.update_revision, e.commit_sha) for e in events if type(e) is ev.ObservationRecorded]
    assert heads == [(1, "ec26c3e57ca3a959ca5aad62de7213c562f8c821"), (2, "ec26c3e57ca3a959ca5aad62de7213c562f8c821"),
                     (3, "9f3c1e5b7d2a4c6e8f0a1b3d5c7e9a2b4d6f8e01")]  # fmt: skip
    synchronized = next(i for i, e in enumerate(events) if type(e) is ev.ObservationRecorded and e.update_revision == 3)
    claims = [(i, e.attempt_id) for i, e in enumerate(events) if type(e) is ev.ActionClaimed]
    assert [attempt for _, attempt in claims] == ["fix-review/a1", "fix-review/a2"]
    assert claims[0][0] < synchronized < claims[1][0]  # claimed for the old head, then the head moved
    (fence,) = [e for e in events if type(e) is ev.SourceRuleApplied]
    assert (fence.operation_id, fence.outcome, fence.reason) == ("fix-review", "fenced", "source_moved")
    assert (fence.facts.source_revision, fence.facts.cause_revision) == (2, 3)
    assert fence.facts.commit_sha == "9f3c1e5b7d2a4c6e8f0a1b3d5c7e9a2b4d6f8e01"
    # Out with the executor when the head moved: untouched until refused, fenced in that same pass.
    refused = next(i for i, e in enumerate(events) if type(e) is ev.AttemptUpdated and e.attempt_id == "fix-review/a1")
    assert events.index(fence) == refused + 1
    # Never claimed again before action.revalidate named revision 3.
    rejected = [e.reason for e in events if type(e) is ev.InputRejected]
    assert rejected == ["stale_revision"]
    revalidated = [e for e in events if type(e) is ev.ActionRevalidated]
    assert len(revalidated) == 1 and events.index(revalidated[0]) < claims[1][0]
