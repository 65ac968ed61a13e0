"""`tandem whatif --store URL` (issue 27; docs/whatif.md): inputs named by
number; the fork folded from the store's newest snapshot before the first
edited input; the store never written.

1. Over a sample of fixtures: dropping input N of the store says what
   dropping its line says over the trace (the same things, states and views).
2. With a snapshot after the edited input and one before it: the same answer,
   byte for byte, as with none.
3. The store's file is byte for byte what it was.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tests.integration.fixture_traces import VALID_TRACES, trace_id

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = VALID_TRACES[::5]


def tandem(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tandem.adapters.cli", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=300)


def stored(path: str, directory: Path) -> str:
    url = f"sqlite:///{directory / 'store.db'}"
    done = tandem("ingest", path, "--store", url)
    assert done.returncode == 0, done.stderr
    return url


def inputs(url: str) -> list[tuple[int, int]]:
    store = open_store(url, read_only=True)
    try:
        return [(e.seq, e.line) for _, e in store.read() if type(e) in (ev.InputAccepted, ev.InputRejected)]  # type: ignore[union-attr]
    finally:
        store.close()


def answer(*arguments: str) -> dict:
    done = tandem("whatif", *arguments, "--json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def shape(result: dict) -> tuple:
    """What a what-if says, in either numbering: things, their states, the views' rows."""
    things = [(t["kind"], t["id"], (t["original"] or {}).get("state"), (t["fork"] or {}).get("state")) for t in result["decisions"]]
    views = [
        (v["view"], len(v["added"]), len(v["removed"]), len(v["changed"]) if v["view"] == "rejections" else [c["key"] for c in v["changed"]])
        for v in result["views"]
    ]  # a rejection's row is keyed by where its input is: a line of the trace, a line of its file in the store
    return result["different"], things, views


@pytest.mark.parametrize("path", SAMPLE, ids=trace_id)
def test_dropping_input_n_of_the_store_is_dropping_its_line_of_the_trace(path: str, tmp_path: Path) -> None:
    url = stored(path, tmp_path)
    numbered = inputs(url)
    seq, line = numbered[len(numbered) // 2]
    over_store = answer("--store", url, "--drop", str(seq))
    over_trace = answer(path, "--drop", str(line))
    assert shape(over_store) == shape(over_trace)
    assert over_store["first_divergence"]["where"] == {"line": seq, "inserted_after": None, "inserted": None}
    assert answer("--store", url)["different"] is False  # no edit: no difference


def test_snapshots_change_nothing_and_the_store_is_never_written(tmp_path: Path) -> None:
    path = "fixtures/gates/16_backend_frontend_tests.jsonl"
    url = stored(path, tmp_path)
    database = tmp_path / "store.db"
    edits = ["--drop", "17", "--set", "20.evidence_ref=ev/other", "--shift", "22=5"]
    without = tandem("whatif", "--store", url, *edits, "--json")
    assert tandem("snapshot", "--store", url).returncode == 0  # a snapshot at the head: after every edit
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    with_late = tandem("whatif", "--store", url, *edits, "--json")
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
    assert (without.returncode, with_late.returncode) == (1, 1), without.stderr
    assert with_late.stdout == without.stdout
    early = tmp_path / "early.db"  # a snapshot before the first edited input: the fork starts from it
    head = tmp_path / "head" / Path(path).name  # the trace's first 25 lines, under its name: resumed below
    head.parent.mkdir()
    head.write_bytes(b"".join((ROOT / path).read_bytes().splitlines(keepends=True)[:25]))
    assert tandem("ingest", str(head), "--store", f"sqlite:///{early}").returncode == 0
    assert tandem("snapshot", "--store", f"sqlite:///{early}").returncode == 0
    assert tandem("ingest", path, "--store", f"sqlite:///{early}").returncode == 0
    with_early = tandem("whatif", "--store", f"sqlite:///{early}", *edits, "--json")
    assert json.loads(with_early.stdout) == {**json.loads(without.stdout), "source": f"sqlite:///{early}"}


def test_an_input_the_store_does_not_have_is_named(tmp_path: Path) -> None:
    url = stored("fixtures/gates/16_backend_frontend_tests.jsonl", tmp_path)
    done = tandem("whatif", "--store", url, "--drop", "99")
    assert done.returncode == 2 and "--drop 99: the store has no input 99" in done.stderr
    both = tandem("whatif", "fixtures/gates/16_backend_frontend_tests.jsonl", "--store", url, "--drop", "3")
    assert both.returncode == 2 and "give a TRACE or --store URL (one of them)" in both.stderr


class _Racing:
    """A store a writer appends to right after the what-if asked its head (as
    a served store's writer may): every other call goes to the store."""

    def __init__(self, store: object, append: object) -> None:
        self.store, self.append, self.asked = store, append, False

    def head(self) -> int:
        head = self.store.head()  # type: ignore[attr-defined]
        if not self.asked:
            self.asked = True
            self.append()  # type: ignore[operator]
        return head

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


def test_inputs_appended_while_it_runs_change_neither_side() -> None:
    from tandem.adapters.ingest import ingest
    from tandem.adapters.trace import read_trace
    from tandem.adapters.whatif_store import whatif_store
    from tandem.replay.engine import Engine
    from tandem.replay.traces import parse_trace
    from tandem.replay.whatif.edits import drop

    path = "fixtures/gates/16_backend_frontend_tests.jsonl"
    quiet, moving = open_store("memory:"), open_store("memory:")
    ingest(Engine(quiet), read_trace(path))
    writer = Engine(moving)
    ingest(writer, read_trace(path))
    beats = parse_trace(
        b'{"type":"watchdog.heartbeat","at":"2030-01-01T00:00:00Z","actor":"watchdog","generation":1}\n' * 3, "later", "later"
    )
    racing = _Racing(moving, lambda: ingest(writer, beats))
    expected = msgspec.json.encode(whatif_store(quiet, "memory:", [drop(17)]))
    assert msgspec.json.encode(whatif_store(racing, "memory:", [drop(17)])) == expected  # type: ignore[arg-type]
    assert moving.head() > quiet.head()  # the writer did append meanwhile


def test_the_answer_names_the_store_without_its_password() -> None:
    from tandem.adapters.whatif_store import whatif_store

    store = open_store("memory:")
    assert whatif_store(store, "postgresql://tandem:s3cret@db.example/tandem", []).source == "postgresql://tandem:***@db.example/tandem"


def test_a_served_whatif_never_waits_for_the_engine(tmp_path: Path) -> None:
    """Service.whatif reads the reader store in a worker thread, as `?at=`
    does: it answers while the engine is held (a commit under way)."""
    import asyncio

    from tandem.adapters.runtime import Runtime, Settings
    from tandem.adapters.service import Service
    from tandem.adapters.tokens import TokenTable
    from tandem.replay.whatif.edits import drop

    url = stored("fixtures/gates/16_backend_frontend_tests.jsonl", tmp_path)
    runtime = Runtime(Settings(store_url=url))
    runtime.lock_store()
    runtime.open()
    reader = open_store(url)
    service = Service(runtime=runtime, reader=reader, tokens=TokenTable(()))

    async def while_held() -> object:
        async with service.engine_lock:
            return await asyncio.wait_for(service.whatif([drop(17)], None), timeout=60)

    try:
        answer = asyncio.run(while_held())
    finally:
        reader.close()
        runtime.close()
    expected = tandem("whatif", "--store", url, "--drop", "17", "--json")
    assert msgspec.json.encode(answer) + b"\n" == expected.stdout.encode()
