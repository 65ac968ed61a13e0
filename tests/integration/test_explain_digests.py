"""What `tandem explain` prints for every id of every fixture, as main
printed it: a change to explain's output (text or JSON) shows here, and is
made on purpose (regenerate the digests and say why in the commit).

    python -m tests.integration.test_explain_digests --write   # after a deliberate change

Each fixture trace is ingested into a memory store the way `tandem replay`
does (as test_event_digests.py does); every id explain can be asked about is
collected from the events (their keys of the explained kinds) and the views
(operations, attempts, deliveries, turns, alerts, questions `task/key`,
tasks, obligations, cause keys, and conversations, which name nothing); for each, in sorted order, the JSON document
and the text are hashed (SHA-256, one digest each per fixture). An id that
names nothing hashes its error message.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain.keys import event_keys
from tandem.replay.engine import Engine, project
from tandem.replay.explain import ExplainError, document, encode_json, render_text
from tandem.replay.port import EventStore
from tests.integration.test_event_digests import name, traces

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = ROOT / "fixtures" / "explain-digests.json"

# The key kinds whose ids are things explain explains (domain/keys.py).
EXPLAINED_KEYS = (
    "action", "attempt", "delivery", "turn", "alert", "question", "task", "obligation", "update", "reconciliation",
    "runtime", "investigation",  # contract v1.2 sections 1 and 5
)  # fmt: skip


def stored(path: Path) -> EventStore:
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(path)))
    assert engine.store is not None
    return engine.store


def identifiers(store: EventStore) -> list[str]:
    """Every id of an explained kind the events or the views name."""
    found: set[str] = set()
    for _, event in store.read():
        found.update(key[1] for key in event_keys(event) if key[0] in EXPLAINED_KEYS)
    views = project(store, use_snapshots=False)
    actions = views.view("actions")
    found.update(row["operation_id"] for row in actions)
    found.update(attempt["attempt_id"] for row in actions for attempt in row["attempts"])
    found.update(row["alert_id"] for row in views.view("alerts"))
    found.update(f"{row['task_id']}/{row['question_key']}" for row in views.view("questions"))
    found.update(row["task_id"] for row in views.view("tasks"))
    found.update(row["cause_key"] for row in views.view("inbox"))
    for row in views.view("conversations"):
        found.add(row["conversation_id"])  # no kind: the error (and the refused inputs it lists)
        found.update(delivery["delivery_id"] for delivery in row["deliveries"])
        found.update(delivery["turn_id"] for delivery in row["deliveries"] if delivery["turn_id"])
    return sorted(found)


def digests(path: Path) -> dict[str, Any]:
    store = stored(path)
    named = identifiers(store)
    as_json, as_text = hashlib.sha256(), hashlib.sha256()
    for identifier in named:
        head = identifier.encode() + b"\n"
        as_json.update(head)
        as_text.update(head)
        try:
            explained = document(store, identifier)
        except ExplainError as error:
            refused = f"ExplainError: {error}\n".encode()
            as_json.update(refused)
            as_text.update(refused)
            continue
        as_json.update(encode_json(explained) + b"\n")
        as_text.update(render_text(explained).encode())
    return {"ids": len(named), "json": as_json.hexdigest(), "text": as_text.hexdigest()}


@pytest.mark.parametrize("path", traces(), ids=name)
def test_explain_prints_what_main_printed_for_every_id(path: Path) -> None:
    recorded = json.loads(DIGESTS.read_text())
    assert name(path) in recorded, f"{name(path)} has no recorded digest: run this module with --write"
    assert digests(path) == recorded[name(path)]


def test_every_recorded_fixture_still_exists() -> None:
    assert sorted(json.loads(DIGESTS.read_text())) == sorted(name(path) for path in traces())


if __name__ == "__main__" and "--write" in sys.argv:
    DIGESTS.write_text(json.dumps({name(path): digests(path) for path in traces()}, indent=2) + "\n")
    print(f"wrote {DIGESTS}")
