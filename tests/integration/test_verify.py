"""`tandem verify` re-derives a store from its recorded inputs: clean on
every fixture, and it names the first divergence of a store edited in place,
of a snapshot whose views were changed, and of a changed decision rule."""

from __future__ import annotations

import json
import pickle
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import tandem.replay.snapshot as snapshots
from tandem.adapters.cli import main
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain import events as ev
from tandem.domain.dispatch import handle_input as real_step
from tandem.domain.inputs import Input
from tandem.domain.state import State
from tandem.replay.engine import Engine
from tandem.replay.port import EventStore
from tandem.replay.verify import first_difference, verify

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
FIXTURES = sorted(
    p for folder in ("traces", "gates") for p in (REPO / "fixtures" / folder).glob("*.jsonl") if p.with_suffix(".views.json").exists()
)


def ingested(tmp_path: Path, trace: Path = EXAMPLE, batch: int = 5, name: str = "store.db") -> tuple[str, EventStore]:
    url = f"sqlite:///{tmp_path / name}"
    store = open_store(url)
    ingest(Engine(store, snapshot_every=0), read_trace(str(trace)), batch_inputs=batch)
    return url, store


def records(store: EventStore) -> list[tuple[int, ev.Event]]:
    return list(store.read())


def record_before(store: EventStore, position: int) -> ev.InputAccepted | ev.InputRejected:
    """The record of the input whose events include `position`."""
    last = None
    for at, event in store.read(until=position):
        if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
            last = event
    assert last is not None
    return last


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------- clean


@pytest.mark.parametrize("trace", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_every_fixture_ingested_into_sqlite_verifies_clean(trace: Path, tmp_path: Path) -> None:
    _, store = ingested(tmp_path, trace, batch=3)
    Engine(store).write_snapshot()
    report = verify(store)
    assert report.ok, "\n".join(report.divergence.lines())  # type: ignore[union-attr]
    assert report.events_checked == store.head()
    assert report.inputs == sum(1 for _, e in store.read() if isinstance(e, (ev.InputAccepted, ev.InputRejected)))
    assert report.snapshots_checked == 1


def test_the_command_on_a_clean_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, store = ingested(tmp_path)
    head = store.head()
    code, out, _ = run_cli(capsys, "verify", "--store", url)
    assert code == 0
    assert out == f"verify: clean: {head} of {head} event(s) checked, 23 input(s) re-derived, 0 snapshot(s) checked\n"
    code, out, _ = run_cli(capsys, "verify", "--store", url, "--json")
    document = json.loads(out)
    assert code == 0 and document["ok"] is True and document["events_checked"] == head and document["divergence"] is None


# ---------------------------------------------------- an event edited in place


def test_an_event_edited_in_place_is_the_first_divergence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, store = ingested(tmp_path)
    position, claimed = next((p, e) for p, e in records(store) if isinstance(e, ev.ActionClaimed))
    cause = record_before(store, position)
    stored = dict(store.read_encoded(after=position - 1, until=position))[position]
    edited = stored.replace(claimed.operation_id.encode(), b"op-forged", 1)
    assert edited != stored
    with sqlite3.connect(tmp_path / "store.db") as connection:  # behind the store's back
        changed = connection.execute(
            "UPDATE tandem_events SET state=? WHERE originator_version=?", (edited, position)
        ).rowcount
    assert changed == 1

    report = verify(open_store(url))
    divergence = report.divergence
    assert divergence is not None and divergence.kind == "event"
    assert divergence.position == position and report.events_checked == position - 1
    assert divergence.input is not None
    assert (divergence.input.seq, divergence.input.file, divergence.input.line) == (cause.seq, cause.file, cause.line)
    assert divergence.stored is not None and "op-forged" in divergence.stored
    assert divergence.rederived is not None and claimed.operation_id in divergence.rederived
    assert any(d.startswith("operation_id: stored 'op-forged'") for d in divergence.differences)

    code, out, err = run_cli(capsys, "verify", "--store", url)
    assert code == 1
    assert out.startswith(f"first divergence at position {position}: the stored event differs from the re-derived ActionClaimed\n")
    assert f"caused by input seq {cause.seq} ({cause.input.input_type}, {cause.file} line {cause.line}" in out
    assert "  stored:     {" in out and "  re-derived: {" in out
    assert "diverges" in err
    code, out, _ = run_cli(capsys, "verify", "--store", url, "--json")
    document = json.loads(out)
    assert code == 1 and document["ok"] is False
    assert document["divergence"]["position"] == position
    assert document["divergence"]["input"]["line"] == cause.line
    assert document["divergence"]["stored"]["operation_id"] == "op-forged"
    assert document["divergence"]["rederived"]["operation_id"] == claimed.operation_id


def test_bytes_that_are_no_event_are_a_divergence(tmp_path: Path) -> None:
    url, store = ingested(tmp_path)
    with sqlite3.connect(tmp_path / "store.db") as connection:
        connection.execute("UPDATE tandem_events SET state=? WHERE originator_version=?", (b"{not json", 1))
    divergence = verify(open_store(url)).divergence
    assert divergence is not None and divergence.position == 1 and divergence.kind == "undecodable"


def test_a_missing_and_an_extra_event_are_divergences(tmp_path: Path) -> None:
    url, store = ingested(tmp_path, batch=100)  # one transaction: no SourceProgressed before the end
    head = store.head()
    last_decision = max(p for p, e in records(store) if isinstance(e, ev.Decision))
    with sqlite3.connect(tmp_path / "store.db") as connection:  # cut the log after the last decision's input began
        connection.execute("DELETE FROM tandem_events WHERE originator_version>=?", (last_decision,))
    divergence = verify(open_store(url)).divergence
    assert divergence is not None and divergence.kind == "missing" and divergence.position == last_decision
    # An extra event appended after the log's end.
    _, other = ingested(tmp_path, name="other.db")
    extra = [e for _, e in records(other) if isinstance(e, ev.Decision)][0]
    other.append([extra], expected_head=other.head())
    divergence = verify(other).divergence
    assert divergence is not None and divergence.kind == "extra" and divergence.position == other.head()
    assert head > 0


# ------------------------------------------------------ a snapshot's view row


def rewrite_snapshot(store: EventStore, change: Callable[[State, dict], None]) -> int:
    """Change the stored snapshot's state or views (keeping its header)."""
    fingerprint = snapshots.code_fingerprint()
    found = store.latest_snapshot(fingerprint)
    assert found is not None
    position, body = found
    decoded = snapshots.decode_body(body, position)
    state = decoded.state()
    views = pickle.loads(decoded.data[decoded.state_end :])
    change(state, views)
    state_part = pickle.dumps(state, protocol=snapshots.pickle_protocol)
    header = bytes(decoded.data[: snapshots._header.size])
    header = header[:-8] + len(state_part).to_bytes(8, "big")
    store.write_snapshot(position, fingerprint, header + state_part + pickle.dumps(views, protocol=snapshots.pickle_protocol))
    return position


def test_a_snapshot_whose_view_row_was_changed_is_a_divergence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, store = ingested(tmp_path)
    Engine(store).write_snapshot()
    assert verify(store).ok

    def change_a_row(state: State, views: dict) -> None:
        views["actions"]["rows"]["op-form"]["state"] = "failed"

    position = rewrite_snapshot(store, change_a_row)
    report = verify(store)
    divergence = report.divergence
    assert divergence is not None and divergence.kind == "snapshot" and divergence.position == position
    assert divergence.message == "the snapshot's actions view differs from the view derived from the events"
    assert divergence.differences == [
        "views.actions['rows']['op-form']['state']: snapshot 'failed', re-derived 'succeeded'"
    ]
    assert report.events_checked == position
    code, out, _ = run_cli(capsys, "verify", "--store", url)
    assert code == 1 and f"first divergence at position {position}: the snapshot's actions view differs" in out


def test_a_snapshot_whose_state_was_changed_is_a_divergence(tmp_path: Path) -> None:
    _, store = ingested(tmp_path)
    Engine(store).write_snapshot()

    def change_the_state(state: State, views: dict) -> None:
        state.actions.by_id["op-api"].attempts[0].state = "unknown"

    position = rewrite_snapshot(store, change_the_state)
    divergence = verify(store).divergence
    assert divergence is not None and divergence.kind == "snapshot" and divergence.position == position
    assert divergence.differences[0].startswith("state.actions.by_id['op-api'].attempts[0].state: snapshot 'unknown'")


def test_first_difference_compares_dict_order_and_sets() -> None:
    assert first_difference({"a": 1, "b": 2}, {"a": 1, "b": 2}, "x") is None
    assert first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}, "x") is not None
    assert first_difference({1, 2}, {2, 1}, "x") is None
    found = first_difference({"s": {1, 2}}, {"s": {1, 3}}, "x")
    assert found is not None and found[2][0].startswith("x['s']: snapshot has 2, re-derived has 3")


# ------------------------------------------------------ a changed decision rule


def dropping_claims_of(operation_id: str):  # type: ignore[no-untyped-def]
    """A test-only variant of the rules: the claim of `operation_id` is
    never made (its ActionClaimed is dropped, and so not applied either)."""

    def step(state: State, value: Input, seq: int, file: str | None, line: int | None, emit) -> None:  # type: ignore[no-untyped-def]
        def filtered(event: ev.Event) -> None:
            if isinstance(event, ev.ActionClaimed) and event.operation_id == operation_id:
                return
            emit(event)

        real_step(state, value, seq, file, line, filtered)

    return step


def test_a_changed_decision_rule_shows_at_the_first_event_it_changes(tmp_path: Path) -> None:
    _, store = ingested(tmp_path)
    position = next(p for p, e in records(store) if isinstance(e, ev.ActionClaimed) and e.operation_id == "op-form")
    cause = record_before(store, position)
    report = verify(store, step=dropping_claims_of("op-form"))
    divergence = report.divergence
    assert divergence is not None and divergence.kind == "event" and divergence.position == position
    assert divergence.input is not None and (divergence.input.line, divergence.input.file) == (cause.line, cause.file)
    assert divergence.input.type == cause.input.input_type
    assert divergence.stored is not None and '"event":"ActionClaimed"' in divergence.stored
    assert divergence.rederived is not None and '"event":"ActionClaimed"' not in divergence.rederived
    # The real rules are clean on the same store.
    assert verify(store).ok
    # And the engine with the changed rule, opened on the store, really decides otherwise.
    variant = Engine(None, step=dropping_claims_of("op-form"))
    for line in read_trace(str(EXAMPLE)).lines:
        variant.decide(line.item)
    assert variant.state.actions.by_id["op-form"].state != "succeeded"
