"""Backfill (issue 26, point 3): `tandem ingest --restamp` applies a trace
whose `at`s are behind the store, and a multi-file ingest checks every file
before it commits any (docs/replay-tools.md, "Several traces into one store").

1. A converted delivery log, backfilled into a store that took some of the
   same deliveries live over HTTP (stamped by the server's clock, months
   after the log's times): each input is recorded at the later of its own
   `at` and the `at` recorded before it, the deliveries the store holds are
   recorded `duplicate_input`, and `tandem verify` re-derives it all. A
   second backfill of the same deliveries (converted again, another file) is
   all `duplicate_input`; the same file again is resumed: nothing applied.
2. What is stamped, exactly: the later of the input's own `at` and the one
   before it, so an input behind the store takes the store's last `at`, and
   one after it keeps its own.
3. Several fixtures (each starting 2026-03-01T09:00:00Z) share one store
   with --restamp; without it the second is refused before the first is
   written, naming the file, the line and the trace before it.
4. A bad second file (a schema error, a trace behind the first, a repeated
   name with other bytes) leaves the store as it was, with or without
   --restamp, and the message names the bad file and line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.domain.inputs import format_at
from tests.e2e.serving import Served, store_head, tandem

ROOT = Path(__file__).resolve().parents[2]
DELIVERIES = ROOT / "fixtures" / "github" / "deliveries.jsonl"
FIXTURES = ROOT / "fixtures" / "traces"
live_lines = 5  # of the converted trace, the deliveries the live store took over HTTP


def recorded(url: str) -> list[tuple[str | None, int | None, str, str | None, str | None]]:
    """Each recorded input: (file, line, at, id, rejection reason or None)."""
    store = open_store(url)
    try:
        rows = []
        for _, event in store.read():
            if type(event) in (ev.InputAccepted, ev.InputRejected):
                reason = event.reason if type(event) is ev.InputRejected else None
                rows.append((event.file, event.line, format_at(event.input.at), event.input.id, reason))
        return rows
    finally:
        store.close()


def ok(*arguments: str) -> str:
    """Run `tandem`, expect exit 0; what it printed (stdout, then stderr)."""
    result = tandem(*arguments)
    assert result.returncode == 0, (arguments, result.stdout, result.stderr)
    return result.stdout + result.stderr


def convert(out: Path) -> list[dict[str, Any]]:
    ok("github", "convert", str(DELIVERIES), "--out", str(out))
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_backfill_into_a_live_store_twice(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    inputs = convert(tmp_path / "backfill.jsonl")
    assert all(value.get("id") for value in inputs) and len({value["id"] for value in inputs}) == len(inputs) - 1
    with Served(tmp_path, url) as server:  # the live store: some of the deliveries, stamped by the server
        client = server.client("source")
        for value in inputs[:live_lines]:
            client.submit({key: item for key, item in value.items() if key != "at"})
    live = recorded(url)  # with the runtime's own daemon.start and daemon.stop
    live_last = live[-1][2]
    assert sum(1 for row in live if (row[0] or "").startswith("http@")) == live_lines
    assert live_last > inputs[-1]["at"]

    refused = tandem("ingest", str(tmp_path / "backfill.jsonl"), "--store", url)
    assert refused.returncode == 2 and recorded(url) == live  # behind the store: refused whole, as before
    assert "line 1: `at` 2026-03-02T10:00:00Z is earlier than the store's last input" in refused.stderr
    assert "`tandem ingest --restamp` would apply it at that time" in refused.stderr

    said = ok("ingest", "--restamp", str(tmp_path / "backfill.jsonl"), "--store", url)
    assert f"backfill.jsonl: {len(inputs)} input(s) applied (6 rejected, {len(inputs)} restamped)" in said
    first = recorded(url)[len(live) :]
    assert [row[2] for row in first] == [live_last] * len(inputs)  # all behind the store: at its last `at`
    assert [row[3] for row in first] == [value["id"] for value in inputs]
    reasons = [row[4] for row in first]
    assert reasons[:live_lines] == ["duplicate_input"] * live_lines  # the ones the store took live
    assert reasons.count("duplicate_input") == live_lines + 1  # and the log's own redelivery
    assert "idempotency_conflict" not in reasons and reasons.count(None) == len(inputs) - 6

    convert(tmp_path / "again.jsonl")  # the same log converted again: the same ids, another file
    ok("ingest", "--restamp", str(tmp_path / "again.jsonl"), "--store", url)
    second = recorded(url)[len(live) + len(inputs) :]
    assert [row[4] for row in second] == ["duplicate_input"] * len(inputs)
    assert {row[0] for row in second} == {"again.jsonl"} and {row[2] for row in second} == {live_last}

    before = recorded(url)
    resumed = ok("ingest", "--restamp", str(tmp_path / "backfill.jsonl"), "--store", url)
    assert f"0 input(s) applied (0 rejected, 0 restamped), {len(inputs)} already in the store" in resumed
    assert recorded(url) == before
    assert "verify: clean" in ok("verify", "--store", url)


def test_restamp_records_the_later_of_its_own_at_and_the_one_before(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    tick = '{{"type":"tick","at":"{}","actor":"daemon"{}}}\n'
    (tmp_path / "head.jsonl").write_text(tick.format("2026-03-01T10:00:00Z", ', "id":"t1"'), encoding="utf-8")
    ok("ingest", str(tmp_path / "head.jsonl"), "--store", url)
    times = ["2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z", "2026-03-01T10:00:00Z", "2026-03-01T10:00:05Z",
             "2026-03-01T10:00:05Z", "2026-03-01T11:00:00Z"]  # fmt: skip
    body = tick.format(times[0], ', "id":"t1"') + "".join(tick.format(at, "") for at in times[1:])
    (tmp_path / "old.jsonl").write_text("// an old trace\n" + body, encoding="utf-8")
    said = ok("ingest", "--restamp", str(tmp_path / "old.jsonl"), "--store", url)
    assert "old.jsonl: 6 input(s) applied (1 rejected, 2 restamped), 0 already in the store" in said
    assert recorded(url)[1:] == [
        ("old.jsonl", 2, "2026-03-01T10:00:00Z", "t1", "duplicate_input"),  # recorded id, earlier: a duplicate
        ("old.jsonl", 3, "2026-03-01T10:00:00Z", None, None),  # behind the store: its last `at`
        ("old.jsonl", 4, "2026-03-01T10:00:00Z", None, None),  # equal: its own
        ("old.jsonl", 5, "2026-03-01T10:00:05Z", None, None),  # after: its own, and so on
        ("old.jsonl", 6, "2026-03-01T10:00:05Z", None, None),
        ("old.jsonl", 7, "2026-03-01T11:00:00Z", None, None),
    ]
    assert "verify: clean" in ok("verify", "--store", url)


def test_several_fixtures_share_a_store_with_restamp(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    names = ["cards.jsonl", "context_ceiling.jsonl", "github_sources.jsonl"]
    paths = [str(FIXTURES / name) for name in names]
    refused = tandem("ingest", *paths, "--store", url)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        (
            "line 7: `at` 2026-03-01T09:00:00Z is earlier than the last input of cards.jsonl (2026-03-01T09:00:12Z), "
            "the trace before it in this run; `tandem ingest --restamp` would apply it at that time"
        ),
        f"tandem: {paths[1]} is not a valid trace; nothing was written",
    ]
    assert store_head(url) == 0
    said = ok("ingest", "--restamp", *paths, "--store", url)
    assert [line.split(":")[0] for line in said.splitlines()] == names
    files = [row[0] for row in recorded(url)]
    assert files == sorted(files, key=names.index)  # one after the other, each in its own order
    assert "verify: clean" in ok("verify", "--store", url)


BAD_SECOND = {  # (the second file, --restamp or not, what the message says)
    "schema error": ('{"type":"tick","at":"2026-03-01T09:00:00Z","actor":"daemon"}\n{"type":"nope"}\n', "line 2: "),
    "behind the first": (
        '{"type":"tick","at":"2026-03-01T09:00:01Z","actor":"daemon"}\n',
        "line 1: `at` 2026-03-01T09:00:01Z is earlier than the last input of first.jsonl (2026-03-01T09:00:12Z)",
    ),
    "ahead of the clock": ('{"type":"tick","at":"9999-01-01T00:00:00Z","actor":"daemon"}\n', "line 1: `at` 9999"),
}
CASES = [(case, False) for case in BAD_SECOND] + [(case, True) for case in BAD_SECOND if case != "behind the first"]


@pytest.mark.parametrize(("case", "restamp"), CASES, ids=[f"{case}-{restamp}" for case, restamp in CASES])
def test_a_bad_second_file_leaves_the_store_untouched(tmp_path: Path, case: str, restamp: bool) -> None:
    """(A second file behind the first is no error with --restamp: test_several_fixtures_share_a_store_with_restamp.)"""
    text, says = BAD_SECOND[case]
    url = f"sqlite:///{tmp_path / 's.db'}"
    (tmp_path / "opening.jsonl").write_text('{"type":"tick","at":"2026-03-01T08:00:00Z","actor":"daemon"}\n')
    ok("ingest", str(tmp_path / "opening.jsonl"), "--store", url)  # a store with something in it
    before = recorded(url)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    shutil.copy(FIXTURES / "cards.jsonl", first)
    second.write_text(text, encoding="utf-8")
    extra = ["--restamp"] if restamp else []
    result = tandem("ingest", *extra, str(first), str(second), "--store", url)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert result.stderr.splitlines()[-1] == f"tandem: {second} is not a valid trace; nothing was written"
    assert recorded(url) == before


@pytest.mark.parametrize("restamp", [False, True], ids=["plain", "restamp"])
def test_one_name_twice_with_other_bytes_is_refused_before_writing(tmp_path: Path, restamp: bool) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(FIXTURES / "cards.jsonl", tmp_path / "a" / "t.jsonl")
    (tmp_path / "b" / "t.jsonl").write_text('{"type":"tick","at":"2026-03-02T09:00:00Z","actor":"daemon"}\n')
    extra = ["--restamp"] if restamp else []
    result = tandem("ingest", *extra, str(tmp_path / "a" / "t.jsonl"), str(tmp_path / "b" / "t.jsonl"), "--store", url)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"tandem: {tmp_path / 'b' / 't.jsonl'}: {tmp_path / 'a' / 't.jsonl'}, before it in this run, is a different "
        "trace named 't.jsonl' (its first 3324 bytes differ); ingest this one on its own, with another --name"
    ), result.stderr
    assert store_head(url) == 0
    # The same bytes twice is no conflict: the second is what the first left, nothing to apply.
    said = ok("ingest", *extra, str(tmp_path / "a" / "t.jsonl"), str(tmp_path / "a" / "t.jsonl"), "--store", url)
    assert said.splitlines()[-1].endswith("0 input(s) applied (0 rejected" + (", 0 restamped" if restamp else "") + "), 14 already in the store")
