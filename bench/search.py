"""Search on a ~1M-event store: each query's latency against the 50 ms goal, SQLite and PostgreSQL side by side.

    python bench/search.py               # ~1M events (built in a few minutes), SQLite
    python bench/search.py --postgres    # the same events copied to PostgreSQL too (TANDEM_POSTGRES_URL)
    python bench/search.py --quick       # ~10k events (a smoke run)
    python bench/search.py --cache DIR   # keep the built SQLite store (and its index) in DIR, reuse it next time
    python bench/search.py --tmp DIR     # put the scratch store under DIR

Issue 28's goal: a search answers in <= 50 ms on a 1M-event store. The
store is bench/workload.py's synthetic steady state (actions proposed,
claimed and succeeding, heartbeats) with questions raised (their text made of words of a vocabulary, each in a few questions), then
CI observations ("CI failed on PR n": common words), ingested as `tandem
ingest` does. Its search index is built as `tandem serve` builds it on a
first start (adapters/search/keeper.py; the time and the size printed).

Each query (an operation's id, an id's beginning, a rare word of a
question, a common word, an input kind, an actor, nothing) is timed as the
server answers it, in this process: `adapters.search.search` on a reader
store and the index (the index's parts, the merge, the shown inputs read
from the log); each figure the median of the repetitions, each repetition
the mean of `calls` searches. Then the console's page, `/search?q=`, from a
real `tandem serve` over loopback (signed in, the whole round trip), on
SQLite. With `--postgres` the store's events are copied to a table of
their own (dropped after) and the same queries timed there, beside.
"""

from __future__ import annotations

import os
import platform
import secrets
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # runnable as `python bench/search.py` from anywhere
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from bench.run import Scratch, batch_ingest  # noqa: E402
from bench.workload import _time, bench_main, observation_inputs, synthetic_inputs  # noqa: E402
from tandem.adapters.search import SearchKeeper, open_index, search  # noqa: E402
from tandem.adapters.store import open_store  # noqa: E402
from tandem.replay.port import EventStore  # noqa: E402

goal_ms = 50.0
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
SYLLABLES = ("ka", "lo", "mi", "ru", "te", "vo", "sa", "ne", "pu", "di", "go", "ba", "zu", "fe", "ri", "ho", "ja", "we", "ci", "ty")


@dataclass(frozen=True)
class Sizes:
    repetitions: int  # medians of these
    calls: int  # searches a repetition
    actions: int  # synthetic_inputs(actions): ~12 events an action
    observations: int  # 2 events each
    question_every: int  # a question raised every this many actions
    page_calls: int = 10  # page fetches a repetition (0: no pages)


# 42,000 actions (~490k events) and 250,000 observations (~500k): ~1M events.
FULL = Sizes(repetitions=5, calls=10, actions=42_000, observations=250_000, question_every=25)
QUICK = Sizes(repetitions=3, calls=3, actions=400, observations=2_500, question_every=25, page_calls=3)


def word(number: int) -> str:
    """A made-up word (8,000 of them): each question's words are rare."""
    return "".join(SYLLABLES[(number // 20**k) % 20] for k in range(3))


def question_words(number: int) -> tuple[str, str, str]:
    return word(number * 7 % 8000), word(number * 13 % 8000 + 1), word(number * 29 % 8000 + 2)


def inputs(sizes: Sizes) -> Iterator[dict[str, Any]]:
    """The actions' steady state with a question raised every
    `question_every` actions (on the task "work", holding nothing; never
    answered: an answer revises the task, and the actions proposed at its
    first revision would be refused), then the observations, stamped after it."""
    asked = 0
    clock = 0
    for value in synthetic_inputs(sizes.actions):
        yield value
        clock += 1
        if value["type"] == "action.propose" and int(value["operation_id"][3:]) % sizes.question_every == 0:
            first, second, third = question_words(asked)
            key = f"q-{asked}"
            yield {"type": "question.raise", "at": value["at"], "actor": "background", "task_id": "work", "question_key": key, "recipient": "human",
                   "blocking_reason": f"Which {first} should {value['operation_id']} use before the {second} step, or the {third} one?",
                   "affected": [], "evidence_revision": 1}  # fmt: skip
            asked += 1
    for number, value in enumerate(observation_inputs(sizes.observations, 1_000)):
        yield {**value, "at": _time(clock + 10 + number // 10)}


@dataclass
class Store:
    url: str
    events: int
    build_s: float | None  # None: reused from the cache
    index_s: float | None
    index_bytes: int
    middle_operation: str
    question: tuple[str, str, str]  # the middle question's words


def _url(directory: str) -> str:
    return f"sqlite:///{os.path.join(os.path.abspath(directory), 'events.db')}"


def database_bytes(path: str) -> int:
    """The database's pages in use (its WAL checkpointed first)."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (pages,), (free,), (size,) = (connection.execute(f"PRAGMA {name}").fetchone() for name in ("page_count", "freelist_count", "page_size"))
    return (pages - free) * size


def build_index(url: str) -> tuple[float, int]:
    """The search index of the store at `url`, as a server's first start builds it: seconds, and bytes (SQLite: the file's growth)."""
    path = url.removeprefix("sqlite:///")
    before = database_bytes(path)
    store = open_store(url)
    index = open_index(url, read_only=False)
    try:
        started = time.perf_counter()
        SearchKeeper(index, store, lambda: True).catch_up()
        elapsed = time.perf_counter() - started
    finally:
        index.close()
        store.close()
    return elapsed, database_bytes(path) - before


def prepared(sizes: Sizes, scratch: Scratch, cache: str | None) -> Store:
    """The store and its index: from the cache when it holds these sizes, else built (into the cache, if given)."""
    directory = cache if cache is not None else scratch.fresh()
    os.makedirs(directory, exist_ok=True)
    stamp = Path(directory, "sizes.txt")
    key = f"{sizes.actions} {sizes.observations} {sizes.question_every}\n"
    middle = (sizes.actions // 2, sizes.actions // sizes.question_every // 2)
    cached = cache is not None and stamp.exists() and stamp.read_text().split("|")[0] == key and Path(directory, "events.db").exists()
    if not cached:
        for name in ("events.db", "events.db-wal", "events.db-shm", "sizes.txt"):
            Path(directory, name).unlink(missing_ok=True)
        started = time.perf_counter()
        batch_ingest(directory, b"".join(msgspec.json.encode(value) + b"\n" for value in inputs(sizes)))
        os.remove(os.path.join(directory, "bench.jsonl"))
        build_s: float | None = time.perf_counter() - started
        index_s, index_bytes = build_index(_url(directory))
        stamp.write_text(f"{key}|{index_s} {index_bytes}")
    else:
        build_s = None
        index_s, index_bytes = (float(part) for part in stamp.read_text().split("|")[1].split())
    store = open_store(_url(directory))
    events = store.head()
    store.close()
    return Store(_url(directory), events, build_s, index_s, int(index_bytes), f"op-{middle[0]}", question_words(middle[1]))


def queries(store: Store) -> dict[str, str]:
    operation = store.middle_operation
    return {
        "an operation's id": operation,
        "an id's beginning": operation[:-1],
        "a rare word": store.question[0],
        "two rare words": f"{store.question[0]} {store.question[1]}",
        "a common word": "failed",
        "an input kind": "action.propose",
        "an actor": "executor",
        "nothing": "zzqx",
    }


@dataclass
class Result:
    name: str
    q: str
    found: str  # what it found (on the first backend)
    ms: dict[str, list[float]]  # per backend, the repetitions' means

    def median(self, backend: str) -> float:
        return statistics.median(self.ms[backend])

    @property
    def met(self) -> bool:
        return all(self.median(backend) <= goal_ms for backend in self.ms)

    def line(self, backends: Sequence[str]) -> str:
        figures = "  ".join(f"{self.median(b):8.2f} ms ({min(self.ms[b]):.2f}-{max(self.ms[b]):.2f})" for b in backends)
        return f"  {self.name:<20} {self.q[:24]:<24} {self.found:<26} {figures}  {'MET' if self.met else 'MISSED'}"


def found_text(results: Any) -> str:
    def part(shown: int, more: int, exact: bool) -> str:
        return f"{shown}" + (f"+{more}" if more else "") + ("" if exact else "+")

    return f"{part(len(results.things), results.things_more, results.things_more_exact)} things, " + \
        f"{part(len(results.inputs), results.inputs_more, results.inputs_more_exact)} inputs"


class Searcher:
    """One backend's store and index, read as the server reads them (a reader store, the index's own connections)."""

    def __init__(self, url: str) -> None:
        self.store: EventStore = open_store(url, read_only=True)
        self.index = open_index(url, read_only=True)

    def per_search_ms(self, q: str, calls: int) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            search(self.index, self.store, q)
        return (time.perf_counter() - started) * 1000 / calls

    def close(self) -> None:
        self.index.close()
        self.store.close()


def measure(searchers: dict[str, Searcher], store: Store, sizes: Sizes) -> list[Result]:
    results = []
    for name, q in queries(store).items():
        answers = [search(searcher.index, searcher.store, q) for searcher in searchers.values()]  # warm, and alike
        assert all(answer == answers[0] for answer in answers), f"the backends answer {q!r} differently"
        assert answers[0].indexed and answers[0].position == store.events, "the index is not built to the head"
        ms: dict[str, list[float]] = {backend: [] for backend in searchers}
        for repetition in range(sizes.repetitions):
            order = list(searchers.items())
            for backend, searcher in order[::-1] if repetition % 2 else order:  # alternated
                ms[backend].append(searcher.per_search_ms(q, sizes.calls))
        results.append(Result(name, q, found_text(answers[0]), ms))
    return results


def copy_to_postgres(store: Store, out: Any) -> tuple[str, str, float, int]:
    """The store's events, byte for byte, in a PostgreSQL table of their own, indexed: (url, table, index seconds, index bytes)."""
    import psycopg

    base = os.environ.get("TANDEM_POSTGRES_URL", POSTGRES_DEFAULT)
    table = f"tandem_bench_search_{secrets.token_hex(4)}"
    url = f"{base}{'&' if '?' in base else '?'}table={table}"
    source, target = open_store(store.url, read_only=True), open_store(url)
    started = time.perf_counter()
    try:
        page: list[bytes] = []
        for _, data in source.read_encoded():
            page.append(data)
            if len(page) == 10_000:
                target.append_encoded(page, target.head())
                page = []
        target.append_encoded(page, target.head())
    finally:
        source.close()
        target.close()
    print(f"PostgreSQL: {store.events:,} events copied to {table} in {time.perf_counter() - started:,.0f} s", file=out)
    started = time.perf_counter()
    index, store_pg = open_index(url, read_only=False), open_store(url)
    try:
        SearchKeeper(index, store_pg, lambda: True).catch_up()
    finally:
        index.close()
        store_pg.close()
    index_s = time.perf_counter() - started
    with psycopg.connect(base, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE " + ", ".join(f"{table}{s}" for s in ("", "_search", "_search_things", "_search_inputs")))
        size = connection.execute(
            "SELECT sum(pg_total_relation_size(c)) FROM unnest(%s::regclass[]) c", ([f"{table}{s}" for s in ("_search", "_search_things", "_search_inputs")],)
        ).fetchone()[0]
    return url, table, index_s, int(size)


def drop_postgres(table: str) -> None:
    import psycopg
    from psycopg import sql

    from tandem.adapters.store.url import side_table_suffixes

    with psycopg.connect(os.environ.get("TANDEM_POSTGRES_URL", POSTGRES_DEFAULT), autocommit=True) as connection:
        for name in (table, *(table + suffix for suffix in side_table_suffixes)):
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def measure_pages(store: Store, sizes: Sizes, directory: str) -> list[Result]:
    """The console's /search page from a real `tandem serve` of the SQLite store."""
    from bench.console import Console, Side

    console = Console(Side(None, None, store.middle_operation, 0.0, store.url), directory)  # type: ignore[arg-type]
    try:
        results = []
        for name, q in queries(store).items():
            path = "/search?q=" + q.replace(" ", "+")
            assert "Searched the log up to position" in console.get(path), path
            ms = []
            for _ in range(sizes.repetitions):
                started = time.perf_counter()
                for _ in range(sizes.page_calls):
                    console.get(path)
                ms.append((time.perf_counter() - started) * 1000 / sizes.page_calls)
            results.append(Result(name, q, "", {"SQLite": ms}))
        return results
    finally:
        console.stop()


def report_store(store: Store, out: Any) -> None:
    built = f"built in {store.build_s:,.0f} s" if store.build_s is not None else "reused from the cache"
    print(f"store: {store.events:,} events ({built})", file=out)
    if store.index_s is not None:
        print(f"SQLite search index: built in {store.index_s:,.1f} s ({store.index_s * 1e6 / store.events:.1f} us an event),"
              f" {store.index_bytes / 1e6:,.1f} MB ({store.index_bytes / store.events:.0f} bytes an event)", file=out)  # fmt: skip


def print_results(title: str, results: list[Result], backends: Sequence[str], out: Any) -> None:
    heads = "  ".join(f"{b:<24}" for b in backends)
    print(f"\n{title} (goal <= {goal_ms:.0f} ms; medians, min-max):\n  {'query':<20} {'q':<24} {'found':<26} {heads}", file=out)
    for result in results:
        print(result.line(backends), file=out)
    out.flush()


def run(sizes: Sizes, tmp: str | None = None, out: Any = sys.stdout, cache: str | None = None, postgres: bool = False) -> list[Result]:
    scratch = Scratch(tmp)
    table = None
    searchers: dict[str, Searcher] = {}
    try:
        print(f"Tandem search bench: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs;"
              f" medians of {sizes.repetitions} alternated repetitions of {sizes.calls} searches", file=out)  # fmt: skip
        store = prepared(sizes, scratch, cache)
        report_store(store, out)
        searchers["SQLite"] = Searcher(store.url)
        if postgres:
            url, table, index_s, size = copy_to_postgres(store, out)
            print(f"PostgreSQL search index: built in {index_s:,.1f} s ({index_s * 1e6 / store.events:.1f} us an event),"
                  f" {size / 1e6:,.1f} MB ({size / store.events:.0f} bytes an event)", file=out)  # fmt: skip
            searchers["PostgreSQL"] = Searcher(url)
        results = measure(searchers, store, sizes)
        print_results("a search, in the server's process", results, list(searchers), out)
        pages = measure_pages(store, sizes, scratch.fresh()) if sizes.page_calls else []
        if pages:
            print_results("the page /search?q=, over HTTP from tandem serve", pages, ["SQLite"], out)
        print("\nVerdicts:", file=out)
        for result in results + pages:
            worst = max(result.median(backend) for backend in result.ms)
            print(f"  {result.name:<20} {worst:7.2f} ms (goal <= {goal_ms:.0f} ms): {'MET' if result.met else 'MISSED'}", file=out)
        return results + pages
    finally:
        for searcher in searchers.values():
            searcher.close()
        if table is not None:
            drop_postgres(table)
        scratch.remove()


def main(argv: Sequence[str] | None = None) -> int:
    options = {"cache": "keep the built store in this directory and reuse it when its sizes match"}
    flags = {"postgres": "also copy the store to PostgreSQL (TANDEM_POSTGRES_URL) and time the same searches there"}
    return bench_main(__doc__, run, FULL, QUICK, "~10k events: a smoke run", argv, flags=flags, options=options)


if __name__ == "__main__":
    sys.exit(main())
