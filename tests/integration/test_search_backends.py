"""The search index gives the same results on memory, SQLite and
PostgreSQL (issue 28, point 1; docs/api.md "Search"): the same stores
(the bundled example, a fixture with questions, and a trace made to reach
the bounds: ids whose order is their UTF-8 bytes', an id with a NUL, more
matches than are counted) indexed by each database and by the memory
backend's scan, every query made from what they hold (each thing's id, its
beginning, each word of the inputs, each input kind and actor) answered
alike, whole answers compared. Also
what the answers must be (exact id first, prefixes in byte order, newest
first, the counts), an index built a few events at a time across appends
equal to one built at once, the bounds of a query, and a read-only index
(a follower's) that writes nothing.

PostgreSQL is TANDEM_POSTGRES_URL's (tests/integration/conftest.py): its
cases are skipped when it cannot be reached, or fail under
TANDEM_REQUIRE_POSTGRES=1."""

from __future__ import annotations

import itertools
import json
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.commands.demo import EXAMPLE
from tandem.adapters.ingest import ingest
from tandem.adapters.search import QueryRefused, SearchKeeper, open_index, search
from tandem.adapters.search import keeper as keeper_module
from tandem.adapters.search.documents import words_of
from tandem.adapters.search.query import counted_max, query_chars_max, query_words_max, shown_max
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.replay.engine import Engine
from tests.integration.conftest import _drop_postgres_table, postgres_url, require_postgres

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "fixtures" / "traces" / "question_holds.jsonl"
WORD_COUNTED = "ubiquitous"  # in more inputs than a part counts
queries_max = 200  # asked of each store (every k-th of those made)
UNICODE_IDS = ["u-a", "u-z", "u-\u00e9", "u-\u00e4", "u-\U0001f600", "u-\u00e9t\u00e9", "u-\x00nul"]


def at(second: int) -> str:
    return f"2026-05-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def bounds_trace() -> bytes:
    """Tasks t-0..t-14 (t-1 is a prefix of t-10..t-14), tasks with the
    UNICODE_IDS, questions whose text shares words, and more than
    `counted_max` inputs holding WORD_COUNTED (ticks do not: observations)."""
    grant = {"allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    lines: list[dict[str, Any]] = [
        {"type": "policy.set", "at": at(0), "actor": "daemon", **grant},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
    ]  # fmt: skip
    for n, task in enumerate([f"t-{k}" for k in range(15)] + UNICODE_IDS):
        lines.append({"type": "task.delegate", "at": at(1 + n), "id": f"in-{task}", "task_id": task, "conversation_id": "fg", "message_refs": [],
                      "goal": f"Goal number {n}: the Zeppelin {'Schema' if n % 2 else 'plan'}", "done_when": ["done"],
                      "grant": {"grant_id": f"g-{n}", **grant}})  # fmt: skip
        lines.append({"type": "question.raise", "at": at(1 + n), "actor": "background", "task_id": task, "question_key": "q", "recipient": "human",
                      "blocking_reason": f"Which schema for {task}? \u00c9t\u00e9 stra\u00dfe", "affected": "task", "evidence_revision": 1})  # fmt: skip
    for n in range(counted_max + 30):
        lines.append({"type": "observe", "at": at(100 + n), "actor": "source", "source_id": f"ci-{n % 7}", "kind": "ci", "scope": f"pr/{n % 7}",
                      "fingerprint": f"f{n}", "complete": True, "text": f"{WORD_COUNTED} failure {n}"})  # fmt: skip
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


STORES = {"example": [EXAMPLE.read_bytes()], "questions": [QUESTIONS.read_bytes()], "bounds": [bounds_trace()]}


BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store of the backend asked (`backend`): PostgreSQL on a table of its own, dropped after."""
    backend = request.getfixturevalue("backend")
    if backend == "memory":
        yield "memory:"
    elif backend == "sqlite":
        yield f"sqlite:///{tmp_path}/events.db"
    else:
        require_postgres()
        table = f"tandem_test_{secrets.token_hex(6)}"
        separator = "&" if "?" in postgres_url() else "?"
        try:
            yield f"{postgres_url()}{separator}table={table}"
        finally:
            _drop_postgres_table(table)


class Indexed:
    """A store and its search index, built as the server builds it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.store = open_store(url)
        self.engine = Engine(self.store, with_views=False, snapshot_every=0)
        self.index = open_index(url, read_only=False)
        self.keeper = SearchKeeper(self.index, self.store, lambda: True)

    def add(self, data: bytes, name: str = "trace.jsonl", **options: Any) -> None:
        ingest(self.engine, parse_trace(data, name), **options)
        assert self.keeper.catch_up() == self.store.head()

    def search(self, q: str) -> Any:
        return search(self.index, self.store, q)

    def close(self) -> None:
        self.index.close()
        self.store.close()


def queries(data: list[bytes], indexed: Indexed) -> list[str]:
    """Every id the index holds, its first three characters, every word of
    the traces, every input kind and actor, and a few that find nothing."""
    found = indexed.search("")
    assert found.indexed and found.position == indexed.store.head()
    ids: set[str] = set()
    words: set[str] = set()
    kinds: set[str] = set()
    for line in (json.loads(line) for chunk in data for line in chunk.splitlines() if line.strip() and not line.startswith(b"//")):
        kinds.update([line["type"], line.get("actor") or ""])
        for field, value in line.items():
            if isinstance(value, str) and field != "at":
                ids.add(value) if len(value) < 40 else None
                words.update(words_of(value))
    ids |= {row.id for q in ("t", "o", "q", "c", "f", "g", "u", "s", "a", "w", "b", "d", "i") for row in indexed.search(q).things}
    asked = sorted(ids) + sorted({identifier[:3] for identifier in ids}) + sorted(words) + sorted(kinds - {""})
    return asked[:: max(1, len(asked) // queries_max)] + ["", "   ", "no-such-thing", "t-1 t-2", "ZEPPELIN schema", "\u00e9t\u00e9", "strasse"]


@pytest.mark.parametrize("backend", BACKENDS[1:])
@pytest.mark.parametrize("name", STORES)
def test_a_database_answers_every_query_as_the_memory_scan_does(name: str, backend: str, backend_url: str) -> None:
    scan, database = Indexed("memory:"), Indexed(backend_url)
    try:
        for indexed in (scan, database):
            for n, data in enumerate(STORES[name]):
                indexed.add(data, f"{name}-{n}.jsonl")
        asked = queries(STORES[name], scan)
        assert len(asked) > 20
        answered = 0
        for q in asked:
            expected = scan.search(q)
            assert database.search(q) == expected, (name, q)
            answered += bool(expected.things or expected.inputs)
        assert answered > len(asked) // 2, "most queries find something: the comparison is not vacuous"
    finally:
        scan.close()
        database.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_the_answers_are(backend: str, backend_url: str) -> None:
    indexed = Indexed(backend_url)
    try:
        indexed.add(bounds_trace())
        found = indexed.search("t-1")
        tasks = [(hit.id, hit.matched) for hit in found.things if hit.kind == "task"]
        assert tasks == [("t-1", "id")] + [(f"t-1{k}", "id prefix") for k in range(5)]
        # the words t and 1: t-1's delegation (its id in-t-1, "Goal number 1") and its question ("for t-1?")
        assert [(hit.input.type, hit.matched) for hit in found.inputs] == [("question.raise", "words"), ("task.delegate", "words")]
        found = indexed.search("u-")
        assert [hit.id for hit in found.things if hit.kind == "task"] == sorted(UNICODE_IDS, key=lambda i: i.encode())
        found = indexed.search("u-\x00nul")
        assert [(hit.kind, hit.id, hit.matched) for hit in found.things][:1] == [("task", "u-\x00nul", "id")]
        found = indexed.search("in-t-1")
        assert [(hit.input.id, hit.matched) for hit in found.inputs] == [("in-t-1", "id")] + [(f"in-t-1{k}", "id prefix") for k in range(5)]
        found = indexed.search("ZEPPELIN schema")  # every word, folded: the odd goals
        assert [hit.input.type for hit in found.inputs] == ["task.delegate"] * 11
        assert all(hit.excerpt is not None and "Zeppelin Schema" in hit.excerpt.text for hit in found.inputs)
        found = indexed.search("stra\u00dfe")  # case-folded: strasse
        assert len(found.inputs) == 22 and found.words == ["strasse"]
        found = indexed.search(WORD_COUNTED)
        assert len(found.inputs) == shown_max and not found.inputs_more_exact
        assert found.inputs_more == counted_max + 1 - shown_max
        positions = [hit.position for hit in found.inputs]
        assert positions == sorted(positions, reverse=True)  # newest first
        found = indexed.search("question.raise")
        assert len(found.inputs) == 22 and found.inputs_more == 0 and found.inputs_more_exact
        assert {(hit.input.type, hit.matched) for hit in found.inputs} == {("question.raise", "kind")}
        found = indexed.search("human")  # an actor: the tasks' delegations
        assert [hit.matched for hit in found.inputs] == ["actor"] * 22 and found.inputs_more == 0
    finally:
        indexed.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_built_a_few_events_at_a_time_across_appends_is_the_same(backend: str, backend_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 7 events cut inputs in two (an input's events go on in the
    next transaction), and a new keeper resumes each time (the open input
    read back from the index and the log)."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    chunks = [(f"example-{start}.jsonl", b"".join(lines[start : start + 5])) for start in range(0, len(lines), 5)]
    whole = Indexed("memory:")
    for name, chunk in chunks:
        ingest(whole.engine, parse_trace(chunk, name))
    whole.keeper.catch_up()  # at once
    monkeypatch.setattr(keeper_module, "page_events", 7)
    piecemeal = Indexed(backend_url)
    try:
        for name, chunk in chunks:
            piecemeal.add(chunk, name)
            piecemeal.keeper = SearchKeeper(piecemeal.index, piecemeal.store, lambda: True)  # as after a restart
        for q in ("signup", "op-api", "human", "action.propose", "op", "backend", "g-signup", "fg"):
            assert piecemeal.search(q) == whole.search(q), q
    finally:
        piecemeal.close()
        whole.close()


def test_a_query_past_its_bounds_is_refused() -> None:
    indexed = Indexed("memory:")
    indexed.add(EXAMPLE.read_bytes())
    with pytest.raises(QueryRefused, match=f"at most {query_chars_max} characters"):
        indexed.search("x" * (query_chars_max + 1))
    with pytest.raises(QueryRefused, match=f"at most {query_words_max} words"):
        indexed.search(" ".join(f"w{n}" for n in range(query_words_max + 1)))
    assert indexed.search("x" * query_chars_max).things == []


def test_a_read_only_index_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    writer = Indexed(url)
    ingest(writer.engine, parse_trace(EXAMPLE.read_bytes(), "example.jsonl"))
    follower = open_index(url, read_only=True)
    reader = open_store(url, read_only=True)
    try:
        assert search(follower, reader, "signup").indexed is False  # no index yet: the writer builds it
        with sqlite3.connect(f"{tmp_path}/events.db") as connection:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE name LIKE '%search%'")]
        assert tables == []
        with pytest.raises(AssertionError, match="never written"):
            follower.prepare()
        writer.keeper.catch_up()
        assert search(follower, reader, "signup") == writer.search("signup") and writer.search("signup").things
    finally:
        follower.close()
        reader.close()
        writer.close()


def test_the_prefix_bound_is_the_next_byte_string() -> None:
    from tandem.adapters.search.query import upper_bound

    assert upper_bound(b"op-") == b"op."
    assert upper_bound("u-\u00e9".encode()) == b"u-\xc3\xaa"
    assert upper_bound(b"a\xff\xff") == b"b"
    assert upper_bound(b"\xff") is None
    for prefix, text in itertools.product(["op", "u-\u00e9", "\U0001f600"], ["op-1", "u-\u00e9t\u00e9", "u-\u00ea", "\U0001f600x", "op"]):
        low, high = prefix.encode(), upper_bound(prefix.encode())
        assert (low <= text.encode() < high) == text.startswith(prefix), (prefix, text)  # type: ignore[operator]


def test_an_index_past_the_logs_head_is_built_again(tmp_path: Path) -> None:
    """Not this log's index (its store replaced, its tables left): the keeper drops it and builds it again."""
    indexed = Indexed(f"sqlite:///{tmp_path}/events.db")
    try:
        indexed.add(EXAMPLE.read_bytes())
        before = indexed.search("signup")
        with sqlite3.connect(tmp_path / "events.db") as connection:
            connection.execute("UPDATE tandem_events_search SET head = 100000")
        connection.close()
        assert indexed.search("signup").position == 100000
        assert indexed.keeper.catch_up() == indexed.store.head()
        assert indexed.search("signup") == before
    finally:
        indexed.close()
