"""`tandem explain` (replay/explain/): the causal chain of a thing, walked
over the provenance its events record (spec section 8).

The bundled example (fixtures/gates/02_prerequisite_user_away.jsonl) checks
the exact inputs and facts of each action's chain; docs/examples/held_action.jsonl
an action held three ways, and what it waits for; every fixture, that the state
explain walks to is the state the views show, for every id of every kind.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tandem.adapters.cli import main
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tandem.replay.explain import KINDS, ExplainError, Explanation, Fact, document, encode_json, event_keys, explain, render_text
from tandem.replay.port import EventStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
HELD = REPO / "docs" / "examples" / "held_action.jsonl"
FIXTURES = sorted(p for folder in ("traces", "gates") for p in (REPO / "fixtures" / folder).glob("*.jsonl"))


def stored(*traces: Path, url: str = "memory:") -> tuple[EventStore, Engine]:
    store = open_store(url)
    engine = Engine(store)
    for trace in traces:
        ingest(engine, read_trace(str(trace)))
    return store, engine


@pytest.fixture(scope="module")
def example() -> EventStore:
    return stored(EXAMPLE)[0]


@pytest.fixture(scope="module")
def held() -> EventStore:
    return stored(HELD)[0]


def one(store: EventStore, identifier: str, kind: str) -> Explanation:
    (explanation,) = explain(store, identifier, kind=kind)
    assert explanation.kind == kind and explanation.id == identifier
    return explanation


def chain(explanation: Explanation) -> list[tuple[str, int | None, str | None]]:
    """(event, the line of the input that caused it, resulting state) per step."""
    return [(step.event, step.input.line if step.input else None, step.state) for step in explanation.steps]


def facts_by_name(facts: list[Fact]) -> dict[str, list[Fact]]:
    named: dict[str, list[Fact]] = {}
    for fact in facts:
        named.setdefault(fact.name, []).append(fact)
    return named


def source_line(fact: Fact) -> tuple[str, int | None, str] | None:
    """(event, line, input type) of the event that established a fact."""
    if fact.source is None:
        return None
    return fact.source.event, fact.source.input.line, fact.source.input.type


# ------------------------------------------------------------ the bundled example


def test_op_form_is_claimed_in_the_pass_of_op_api_s_outcome_with_every_fact_it_relied_on(example: EventStore) -> None:
    explanation = one(example, "op-form", "operation")
    assert explanation.state == "succeeded"
    assert chain(explanation) == [
        ("ActionProposed", 22, "pending"),
        ("ActionBlocked", 22, "pending"),
        ("ActionClaimed", 26, "submitting"),
        ("AttemptUpdated", 27, "accepted"),
        ("ActionOutcomeReported", 29, "succeeded"),
    ]
    blocked = explanation.steps[1]
    assert blocked.summary == "blocked_by [prerequisite_pending]"
    (waiting_on,) = blocked.facts
    assert waiting_on.value["operation_id"] == "op-api" and waiting_on.value["state"] == "submitting"
    assert source_line(waiting_on) == ("ActionClaimed", 21, "action.propose")  # op-api was claimed at line 21
    assert waiting_on.now.state == "succeeded" and waiting_on.now.source.input.line == 26

    claim = explanation.steps[2]
    assert claim.input.type == "executor.outcome" and claim.input.seq == 16 and claim.input.id is None
    assert claim.input.file == EXAMPLE.name and claim.input.at == "2026-03-01T09:20:00Z"
    named = facts_by_name(claim.facts)
    assert named["task_revision"][0].value == {"id": "signup", "revision": 1}
    assert source_line(named["task_revision"][0]) == ("TaskDelegated", 18, "task.delegate")
    assert named["grant_revision"][0].value == {"id": "g-signup", "revision": 1}
    assert source_line(named["grant_revision"][0]) == ("GrantIssued", 18, "task.delegate")
    assert named["policy_revision"][0].value["revision"] == 1
    assert source_line(named["policy_revision"][0]) == ("PolicySet", 11, "policy.set")
    assert source_line(named["intent_revision"][0]) == ("MessageQueued", 16, "human.message")
    assert source_line(named["synced_intent_revision"][0]) == ("IntentSynced", 20, "intent.synced")
    assert named["binding_generation"][0].value == {"conversation_id": "fg", "generation": 1}
    assert source_line(named["binding_generation"][0]) == ("BackgroundBound", 14, "background.bind")
    (heartbeat,) = named["heartbeat"]
    assert heartbeat.value == {"generation": 1, "at": "2026-03-01T09:19:30Z", "watchdog_max_age_s": 120, "age_s": 30.0}
    assert source_line(heartbeat) == ("HeartbeatRecorded", 25, "watchdog.heartbeat")
    (prerequisite,) = named["prerequisite"]
    assert prerequisite.value == {
        "operation_id": "op-api",
        "state": "succeeded",
        "artifact_revision": "api@abc123",
        "required_artifact_revision": "api@abc123",
    }
    assert source_line(prerequisite) == ("ActionOutcomeReported", 26, "executor.outcome")
    assert explanation.waiting == []
    assert explanation.related == ["attempt op-form/a1", "cause outcome:op-form", "obligation op-form"]


def test_op_api_and_op_it_chains(example: EventStore) -> None:
    op_api = one(example, "op-api", "operation")
    assert chain(op_api) == [
        ("ActionProposed", 21, "pending"),
        ("ActionClaimed", 21, "submitting"),  # nothing blocked it: claimed in its own proposal's pass
        ("AttemptUpdated", 24, "accepted"),
        ("ActionOutcomeReported", 26, "succeeded"),
    ]
    claim = facts_by_name(op_api.steps[1].facts)
    assert source_line(claim["heartbeat"][0]) == ("HeartbeatRecorded", 15, "watchdog.heartbeat")
    assert "prerequisite" not in claim

    op_it = one(example, "op-it", "operation")
    assert chain(op_it) == [
        ("ActionProposed", 23, "pending"),
        ("ActionBlocked", 23, "pending"),
        ("ActionClaimed", 29, "submitting"),  # in the pass of op-form's outcome
        ("AttemptUpdated", 30, "accepted"),
        ("ActionOutcomeReported", 32, "succeeded"),
    ]
    prerequisites = facts_by_name(op_it.steps[2].facts)["prerequisite"]
    assert [(p.value["operation_id"], p.value["artifact_revision"], source_line(p)[1]) for p in prerequisites] == [
        ("op-api", "api@abc123", 26),
        ("op-form", "form@def456", 29),
    ]
    assert source_line(facts_by_name(op_it.steps[2].facts)["heartbeat"][0])[1] == 28


def test_an_operation_id_is_also_its_obligation_and_each_is_explained(example: EventStore) -> None:
    both = explain(example, "op-api")
    assert [e.kind for e in both] == ["operation", "obligation"]
    obligation = both[1]
    assert obligation.state == "due"
    assert chain(obligation) == [
        ("ObligationOpened", 26, "open"),
        ("ObligationDue", 28, "due"),
        ("AlertRaised", 28, "due"),
    ]
    assert [w.code for w in obligation.waiting] == ["turn.ended"]


# -------------------------------------------------------------- a held action


def test_a_held_action_says_what_it_waits_for_each_with_the_input_that_last_changed_it(held: EventStore) -> None:
    explanation = one(held, "op-migrate", "operation")
    assert explanation.state == "pending"
    by_code = {w.code: w for w in explanation.waiting}
    assert list(by_code) == ["prerequisite_pending", "question_hold", "watchdog_unavailable"]

    prerequisite = by_code["prerequisite_pending"]
    assert (prerequisite.since.input.line, prerequisite.since.input.type) == (11, "action.propose")
    (fact,) = prerequisite.facts
    # Recorded when the question changed the codes: op-schema had been accepted (line 12) by then.
    assert fact.value["operation_id"] == "op-schema" and fact.value["state"] == "accepted"
    assert source_line(fact) == ("AttemptUpdated", 12, "executor.receipt")

    question = by_code["question_hold"]
    assert (question.since.input.line, question.since.input.type) == (13, "question.raise")
    (fact,) = question.facts
    assert fact.value == {"task_id": "t1", "question_key": "which-db", "via": "operation"}
    assert source_line(fact) == ("QuestionRaised", 13, "question.raise")
    assert fact.now.state == "open"

    watchdog = by_code["watchdog_unavailable"]
    assert (watchdog.since.input.line, watchdog.since.input.type) == (14, "tick")
    (fact,) = watchdog.facts
    assert fact.value == {"generation": 1, "at": "2026-03-01T09:00:00Z", "watchdog_max_age_s": 120, "age_s": 300.0}
    assert source_line(fact) == ("HeartbeatRecorded", 8, "watchdog.heartbeat")

    text = render_text(document(held, "op-migrate"))
    assert "question_hold: an open question holds it [since ActionBlocked #24, line 13 question.raise]" in text
    assert "question t1/which-db lists this operation [QuestionRaised #23, line 13 question.raise]; now open" in text
    assert "300 s old, stale (max age 120 s) [HeartbeatRecorded #10, line 8 watchdog.heartbeat]" in text


def test_the_question_and_the_alert_of_the_held_action(held: EventStore) -> None:
    question = one(held, "t1/which-db", "question")
    assert question.state == "open"
    assert chain(question) == [
        ("QuestionRaised", 13, "open"),
        ("ActionBlocked", 13, "open"),
        ("ActionBlocked", 14, "open"),
    ]
    (waiting,) = question.waiting
    assert waiting.code == "question.answer" and [f.value for f in waiting.facts] == ["op-migrate"]

    alert = one(held, "watchdog_unavailable:engine", "alert")
    assert alert.state == "raised" and chain(alert) == [("AlertRaised", 14, "raised")]
    named = facts_by_name(alert.steps[0].facts)
    assert named["operation"][0].value == "op-migrate"
    assert source_line(named["heartbeat"][0]) == ("HeartbeatRecorded", 8, "watchdog.heartbeat")


def test_answering_fences_the_held_action_and_it_then_waits_for_revalidation(tmp_path: Path) -> None:
    trace = tmp_path / "held_then_answered.jsonl"
    shutil.copy(HELD, trace)
    with trace.open("a") as file:
        file.write(
            '{"type":"watchdog.heartbeat","at":"2026-03-01T09:05:10Z","actor":"watchdog","generation":2}\n'
            '{"type":"question.answer","at":"2026-03-01T09:06:00Z","task_id":"t1","question_key":"which-db","answer":"postgres"}\n'
        )
    store, _ = stored(trace)
    explanation = one(store, "op-migrate", "operation")
    assert explanation.state == "fenced"
    assert chain(explanation)[-2:] == [("ActionBlocked", 15, "pending"), ("TaskRevised", 16, "fenced")]
    assert explanation.steps[-2].summary == "blocked_by [prerequisite_pending, question_hold]"  # fresh again at line 15
    (waiting,) = explanation.waiting
    assert waiting.code == "action.revalidate" and waiting.since.input.line == 16
    question = one(store, "t1/which-db", "question")
    assert question.state == "answered" and question.waiting == []
    alert = one(store, "watchdog_unavailable:engine", "alert")
    assert alert.state == "resolved" and alert.steps[-1].facts[0].value["generation"] == 2


# ------------------------------------------------------------------ every kind


def test_every_kind_on_the_example_and_its_reconciliation_gate(example: EventStore) -> None:
    cases = {
        "attempt": ("op-form/a1", "accepted", ["ActionClaimed", "AttemptUpdated", "ActionOutcomeReported"]),
        "delivery": ("fg/d2", "submitting", ["DeliveryCreated"]),
        "turn": ("fg/t2", "running", ["TurnStarted", "DeliveryCreated"]),
        "alert": ("fallback_delivery:op-form", "raised", ["AlertRaised"]),
        "task": ("signup", "completed", None),
        "obligation": ("op-it", "open", ["ObligationOpened"]),
        "cause": ("outcome:op-api", "revision 1, triaged actionable", None),
    }
    for kind, (identifier, state, events) in cases.items():
        explanation = one(example, identifier, kind)
        assert explanation.state == state, kind
        if events is not None:
            assert [step.event for step in explanation.steps] == events, kind
    delivery = one(example, "fg/d2", "delivery")
    named = facts_by_name(delivery.steps[0].facts)
    assert named["rule"][0].value == "wake"
    assert named["budget"][0].value["room"] == 179_975
    assert [c.value["cause_key"] for c in named["candidate"]] == ["outcome:op-api"]
    assert source_line(named["candidate"][0]) == ("UpdateTriaged", 26, "executor.outcome")
    assert [w.code for w in delivery.waiting] == ["provider.receipt"]
    task = one(example, "signup", "task")
    assert [step.event for step in task.steps][:2] == ["GrantIssued", "TaskDelegated"]
    assert task.steps[-2].event == "TaskCompleted" and task.steps[-2].input.line == 33

    gate, _ = stored(REPO / "fixtures" / "gates" / "06_restart_empty_pruned_log.jsonl")
    reconciliations = sorted(
        {key[1] for _, event in gate.read() for key in event_keys(event) if key[0] == "reconciliation"}
    )
    assert reconciliations
    for identifier in reconciliations:
        explanation = one(gate, identifier, "reconciliation")
        assert explanation.steps[0].event == "ReconciliationStarted"
        assert explanation.state in ("open", "committed")
        assert (explanation.state == "open") == (explanation.waiting != [])


def _ids(store: EventStore) -> dict[str, set[str]]:
    prefixes = {
        "action": "operation", "attempt": "attempt", "delivery": "delivery", "turn": "turn", "alert": "alert",
        "question": "question", "task": "task", "obligation": "obligation", "update": "cause",
        "reconciliation": "reconciliation",
    }  # fmt: skip
    ids: dict[str, set[str]] = {kind: set() for kind in prefixes.values()}
    for _, event in store.read():
        for key in event_keys(event):
            if key[0] in prefixes:
                ids[prefixes[key[0]]].add(key[1])
    return ids


@pytest.mark.parametrize("trace", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_explain_walks_to_the_state_the_views_show_for_every_id(trace: Path) -> None:
    store, engine = stored(trace)
    views = engine.views
    actions = {row["operation_id"]: row for row in views.view("actions")}
    alerts = {row["alert_id"]: row for row in views.view("alerts")}
    questions = {f"{row['task_id']}/{row['question_key']}": row for row in views.view("questions")}
    tasks = {row["task_id"]: row for row in views.view("tasks")}
    deliveries = {d["delivery_id"]: d for row in views.view("conversations") for d in row["deliveries"]}
    attempts = {a["attempt_id"]: a for row in actions.values() for a in row["attempts"]}
    inbox = {row["cause_key"]: row for row in views.view("inbox")}
    for kind, identifiers in _ids(store).items():
        for identifier in sorted(identifiers):
            explanations = explain(store, identifier, kind=kind) if kind != "operation" or identifier in actions else []
            for explanation in explanations:
                assert explanation.steps, (kind, identifier)
                assert all(step.input is not None for step in explanation.steps), (kind, identifier)
                if kind == "operation":
                    assert explanation.state == actions[identifier]["state"], identifier
                    if explanation.state == "pending":
                        assert [w.code for w in explanation.waiting] == actions[identifier]["blocked_by"], identifier
                elif kind == "attempt":
                    assert explanation.state == attempts[identifier]["state"], identifier
                elif kind == "alert":
                    assert explanation.state == alerts[identifier]["state"], identifier
                    assert sum(step.event == "AlertRaised" for step in explanation.steps) == alerts[identifier]["count"]
                elif kind == "question":
                    assert explanation.state == questions[identifier]["state"], identifier
                elif kind == "task":
                    row = tasks[identifier]
                    assert explanation.state == row["state"], identifier
                    assert explanation.summary.startswith(
                        f"{row['state']}, revision {row['revision']}, holds [{', '.join(row['holds'])}]"
                    )
                    if row["state"] == "active":
                        assert [w.code for w in explanation.waiting] == row["holds"], identifier
                elif kind == "delivery":
                    assert explanation.state == deliveries[identifier]["attempt_state"], identifier
                elif kind == "cause" and identifier in inbox and inbox[identifier]["revision"] == 0:  # only ignored observations
                    assert explanation.state == f"no inbox update ({inbox[identifier]['ignored']} ignored)", identifier
                elif kind == "cause" and identifier in inbox:
                    row = inbox[identifier]
                    assert explanation.state.startswith(
                        f"revision {row['revision']}, {row['triage_state']}"
                    ), identifier
            explained = document(store, identifier)
            # Filtering stored bytes before decoding them changes nothing.
            assert encode_json(explained) == encode_json(document(store, identifier, prefilter=False)), identifier


# ------------------------------------------------------------ the JSON shape


def test_the_json_document_has_its_documented_shape(held: EventStore) -> None:
    value = json.loads(encode_json(document(held, "op-migrate")))
    assert list(value) == ["id", "position", "files", "matches", "other_files"]
    assert value["id"] == "op-migrate" and value["position"] == held.head() and value["files"] == ["held_action.jsonl"]
    assert value["other_files"] is False
    (match,) = value["matches"]
    assert list(match) == ["kind", "id", "state", "summary", "steps", "waiting", "related", "steps_omitted"]
    step = match["steps"][1]
    assert list(step) == ["position", "event", "summary", "state", "input", "facts", "count"]
    assert list(step["input"]) == ["seq", "file", "line", "type", "id", "actor", "at", "rejected"]
    fact = step["facts"][0]
    assert list(fact) == ["name", "text", "value", "source", "now"]
    assert list(fact["source"]) == ["position", "event", "input"]
    assert list(fact["now"]) == ["state", "source"]
    waiting = match["waiting"][0]
    assert list(waiting) == ["code", "text", "facts", "since"]


# ------------------------------------------------------------------ the command


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_prints_text_and_json_from_a_sqlite_store(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'example.db'}"
    stored(EXAMPLE, url=url)
    code, out, err = run_cli(capsys, "explain", "op-form", "--store", url, "--kind", "operation")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "operation op-form: succeeded"
    assert "  #42 ActionClaimed -> submitting   (input 16, line 26 executor.outcome)" in lines
    assert any(
        "op-api succeeded with api@abc123 (requires api@abc123) [ActionOutcomeReported #38, line 26 executor.outcome]"
        in line
        for line in lines
    )
    code, out, _ = run_cli(capsys, "explain", "op-form", "--store", url, "--json")
    assert code == 0
    assert [m["kind"] for m in json.loads(out)["matches"]] == ["operation", "obligation"]


def test_the_command_names_the_file_when_the_store_holds_several_traces(tmp_path: Path, capsys) -> None:
    later = tmp_path / "later.jsonl"
    later.write_text('{"type":"tick","at":"2026-03-01T10:00:00Z","actor":"daemon"}\n')
    url = f"sqlite:///{tmp_path / 'two.db'}"
    stored(EXAMPLE, later, url=url)
    code, out, _ = run_cli(capsys, "explain", "op-form", "--store", url)
    assert code == 0 and "(input 16, 02_prerequisite_user_away.jsonl:26 executor.outcome)" in out


def test_unknown_ids_and_bad_usage(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'example.db'}"
    stored(EXAMPLE, url=url)
    code, out, err = run_cli(capsys, "explain", "op-nope", "--store", url)
    assert (code, out) == (1, "") and "nothing in the store is named 'op-nope'" in err
    code, _, err = run_cli(capsys, "explain", "op-form", "--store", url, "--kind", "task")
    assert code == 1 and "'op-form' is no task (it is: operation, obligation)" in err
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    code, _, err = run_cli(capsys, "explain", "op-form", "--store", empty)
    assert code == 1 and "does not exist" in err  # a reader creates no store (issue 15)
    open_store(empty).close()
    code, _, err = run_cli(capsys, "explain", "op-form", "--store", empty)
    assert code == 1 and "the store is empty" in err
    code, _, err = run_cli(capsys, "explain", "op-form", "--store", "nowhere")
    assert code == 1 and "bad store URL" in err
    code, _, err = run_cli(capsys, "explain", "  ", "--store", url)
    assert code == 2 and "ID is empty" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", "op-form", "--store", url, "--kind", "nope"])
    assert exit_info.value.code == 2
    with pytest.raises(ExplainError):
        explain(open_store(url), "op-nope")
    # An id only refused inputs name: the error says which, and why.
    store, _ = stored(REPO / "fixtures" / "traces" / "idempotency_and_gates.jsonl")
    with pytest.raises(
        ExplainError, match="named by refused inputs only: input 11 .*:21 action.propose. was rejected unknown_task"
    ):
        explain(store, "p-bad")
    with pytest.raises(ValueError):
        explain(open_store(url), "op-form", kind="nope")
    assert set(KINDS) >= {
        "operation",
        "attempt",
        "delivery",
        "turn",
        "alert",
        "question",
        "task",
        "obligation",
        "cause",
    }


# ------------------------------------------------------------------ the docs


def test_the_outputs_shown_in_docs_explain_md_are_what_explain_prints(tmp_path: Path, capsys) -> None:
    """docs/explain.md pastes real output: it must stay what the command prints."""
    doc = (REPO / "docs" / "explain.md").read_text()
    blocks = [block.split("```", 1)[0] for block in doc.split("```console\n")[1:]]
    checked = 0
    for block in blocks:
        commands = [line for line in block.splitlines() if line.startswith("$ tandem explain ")]
        if not commands:
            continue
        (command,) = commands
        printed = block.split(command + "\n", 1)[1]
        args = command[len("$ tandem ") :].split()
        store_url = args[args.index("--store") + 1]
        trace = EXAMPLE if "example.db" in store_url else HELD
        url = f"sqlite:///{tmp_path / store_url.rpartition('/')[2]}"
        if not (tmp_path / store_url.rpartition("/")[2]).exists():
            stored(trace, url=url)
        args[args.index("--store") + 1] = url
        code, out, _ = run_cli(capsys, *args)
        assert code == 0 and out == printed, command
        checked += 1
    assert checked >= 4


@pytest.mark.parametrize("trace", FIXTURES[::3], ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES[::3]])
def test_every_key_an_event_has_is_one_the_read_filter_lets_through(trace: Path) -> None:
    """explain decodes only the event types that can have the wanted keys
    (`KIND_TAGS`): each key an event has must be of a kind its type is listed for."""
    from tandem.replay.explain.keys import KIND_TAGS

    store, _ = stored(trace)
    for _, event in store.read():
        for key in event_keys(event):
            assert type(event).__name__.encode() in KIND_TAGS[key[0]], (type(event).__name__, key)
