"""A prototype, not the store's layout: one row per input instead of one per event.

    python bench/row_per_input.py            # ~92k inputs, ~364k events
    python bench/row_per_input.py --quick    # a smoke run

Issue 15 asked what storing each input's events as one row (a JSON array of
the events' own encodings) would give. This measures it on plain sqlite3,
outside the store: the same events (the synthetic trace, decided by the
engine) written both ways into two tables of the store's schema, then

- read + decode: the whole table in order, every event decoded (one
  `decode_event` a row, against one `Decoder(list[AnyEvent])` a row), CPU
  microseconds per event;
- append: both tables filled again in transactions of 1,000 inputs, encoding
  included, CPU microseconds per input.

The store keeps one row per event: followers tail `tandem_events` row by row,
a position is an event's position, and existing stores must keep working
(bench/PROFILE.md has the figures and the reasons).
"""

from __future__ import annotations

import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from bench.workload import bench_main, synthetic_trace  # noqa: E402
from tandem.adapters.trace import parse_trace  # noqa: E402
from tandem.domain.events import AnyEvent, Event, decode_event, encode_event, event_name  # noqa: E402
from tandem.replay.engine import Engine  # noqa: E402

FULL = {"actions": 30_000, "repetitions": 5}
QUICK = {"actions": 500, "repetitions": 2}
append_batch_inputs = 1_000
_schema = (
    "(originator_id TEXT, originator_version INTEGER, topic TEXT, state BLOB,"
    " PRIMARY KEY (originator_id, originator_version))"
)
_stream = "tandem-log"
_decode_many = msgspec.json.Decoder(list[AnyEvent])
Row = tuple[str, int, str, bytes]


def decided(actions: int) -> list[list[Event]]:
    """The events of each input of the synthetic trace, as the engine decides them."""
    engine = Engine(with_views=False)
    return [engine.decide(line.item) for line in parse_trace(synthetic_trace(actions), "prototype.jsonl").lines]


def event_rows(events: Sequence[Event], position: int) -> list[Row]:
    return [(_stream, position + offset, event_name(event), encode_event(event)) for offset, event in enumerate(events)]


def input_rows(events: Sequence[Event], position: int) -> list[Row]:
    return [(_stream, position, "Input", b"[" + b",".join(encode_event(event) for event in events) + b"]")]


def fill(connection: sqlite3.Connection, table: str, groups: list[list[Event]], rows_of: Callable[..., list[Row]]) -> float:
    """CPU seconds to write every group, `append_batch_inputs` inputs a transaction."""
    connection.execute(f"DELETE FROM {table}")
    started = time.process_time()
    position = 1
    for begin in range(0, len(groups), append_batch_inputs):
        rows: list[Row] = []
        for events in groups[begin : begin + append_batch_inputs]:
            rows.extend(rows_of(events, position + len(rows)))
        connection.execute("BEGIN")
        connection.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?)", rows)
        connection.execute("COMMIT")
        position += len(rows)
    return time.process_time() - started


def read_events(connection: sqlite3.Connection, table: str) -> tuple[float, int]:
    """CPU seconds to read and decode the table in order, and the events decoded."""
    started = time.process_time()
    count = 0
    query = f"SELECT state FROM {table} WHERE originator_id=? ORDER BY originator_version"
    if table == "per_event":
        for (state,) in connection.execute(query, (_stream,)):
            decode_event(state)
            count += 1
    else:
        for (state,) in connection.execute(query, (_stream,)):
            count += len(_decode_many.decode(state))
    return time.process_time() - started, count


def run(sizes: dict[str, int], tmp: str | None = None) -> dict[str, float]:
    groups = decided(sizes["actions"])
    events = sum(len(group) for group in groups)
    directory = tempfile.mkdtemp(prefix="tandem-rows-", dir=tmp)
    connection = sqlite3.connect(os.path.join(directory, "rows.db"), isolation_level=None)
    figures: dict[str, list[float]] = {"per_event read": [], "per_input read": [], "per_event append": [], "per_input append": []}
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        for table in ("per_event", "per_input"):
            connection.execute(f"CREATE TABLE {table} {_schema}")
        gc.disable()  # as the engine's fold: the collector paused
        for repetition in range(sizes["repetitions"]):
            order = [("per_event", event_rows), ("per_input", input_rows)]
            for table, rows_of in order[::-1] if repetition % 2 else order:
                figures[f"{table} append"].append(fill(connection, table, groups, rows_of) / len(groups) * 1e6)
                seconds, count = read_events(connection, table)
                assert count == events, (table, count, events)
                figures[f"{table} read"].append(seconds / events * 1e6)
    finally:
        gc.enable()
        connection.close()
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        os.rmdir(directory)
    medians = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{len(groups):,} inputs, {events:,} events; medians of {sizes['repetitions']} alternated repetitions, CPU time")
    print(f"  read + decode, us an event:   one row an event {medians['per_event read']:.3f},"
          f" one row an input {medians['per_input read']:.3f}")  # fmt: skip
    print(f"  append (encoding included), us an input:   one row an event {medians['per_event append']:.2f},"
          f" one row an input {medians['per_input append']:.2f}")  # fmt: skip
    return medians


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(__doc__, run, FULL, QUICK, "small sizes: a smoke run", argv)


if __name__ == "__main__":
    sys.exit(main())
