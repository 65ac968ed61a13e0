"""The store contract (`replay.port.EventStore`), on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

import tandem.adapters.store.recorder as recorder_module  # the module that reads and encodes
from tandem.adapters.store import MsgspecMapper, open_store, store_url_help
from tandem.domain.events import (
    Event,
    InputAccepted,
    QuestionRaised,
    TaskDelegated,
    decode_event,
    encode_event,
)
from tandem.domain.inputs import decode_input
from tandem.replay.port import ConcurrencyError, EventStore, StoreError

OpenUrl = Callable[[str], EventStore]


def input_accepted(seq: int) -> InputAccepted:
    tick = decode_input(b'{"type":"tick","at":"2024-05-01T12:00:00Z"}')
    return InputAccepted(seq=seq, file="trace.jsonl", line=seq, input=tick)


def task_delegated(cause: int) -> TaskDelegated:
    return TaskDelegated(
        cause=cause,
        task_id=f"task-{cause}",
        conversation_id="conversation-1",
        message_refs=["message-1", "message-2"],
        goal="Ship the report",
        done_when=["report merged"],
        constraints={"budget": {"tokens": 1000, "paths": ["docs/", "src/"]}, "unicode": "é✓"},
        fallback_decisions={"timeout": "ask"},
        depends_on=[],
        grant_id="grant-1",
    )


def question_raised(cause: int) -> QuestionRaised:
    return QuestionRaised(
        cause=cause,
        task_id=f"task-{cause}",
        question_key="which-branch",
        recipient="human",
        blocking_reason="ambiguous",
        affected=["action-1"],
        evidence_revision=2,
        times_raised=1,
        first_seen_at=datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc),
        reopened=False,
    )


def events(count: int, first_seq: int = 1) -> list[Event]:
    """`count` distinct events cycling through three kinds."""
    makers = (input_accepted, task_delegated, question_raised)
    return [makers[index % 3](first_seq + index) for index in range(count)]


def contents(store: EventStore) -> list[tuple[int, Event]]:
    return list(store.read())


def numbered(values: list[Event], first_position: int = 1) -> list[tuple[int, Event]]:
    return list(enumerate(values, start=first_position))


# ------------------------------------------------------------------- contract


def test_an_empty_store_has_head_zero_and_reads_nothing(store: EventStore) -> None:
    assert store.head() == 0
    assert contents(store) == []
    assert list(store.read_encoded()) == []


def test_append_returns_the_new_head_and_read_returns_the_events_in_order(store: EventStore) -> None:
    first, second = events(3), events(2, first_seq=4)
    assert store.append(first, expected_head=0) == 3
    assert store.append(second, expected_head=3) == 5
    assert store.head() == 5
    assert contents(store) == numbered(first + second)
    # The decoded input nested in InputAccepted survives the round trip.
    position, event = contents(store)[0]
    assert isinstance(event, InputAccepted) and event.input.input_type == "tick"


def test_an_empty_append_writes_nothing(store: EventStore) -> None:
    store.append(events(2), expected_head=0)
    assert store.append([], expected_head=2) == 2
    assert store.head() == 2


def test_read_windows(store: EventStore) -> None:
    written = events(6)
    store.append(written, expected_head=0)
    assert list(store.read(after=2)) == numbered(written[2:], first_position=3)
    assert list(store.read(until=4)) == numbered(written[:4])
    assert list(store.read(after=1, until=3)) == numbered(written[1:3], first_position=2)
    assert list(store.read(after=6)) == []
    assert list(store.read(after=9)) == []
    assert list(store.read(after=3, until=3)) == []
    assert list(store.read(until=0)) == []
    assert list(store.read(until=99)) == numbered(written)


@pytest.mark.parametrize("total", [30, 28])  # 28: a multiple of the page size
def test_read_crosses_pages(store: EventStore, monkeypatch: pytest.MonkeyPatch, total: int) -> None:
    monkeypatch.setattr(recorder_module, "read_page_events_max", 7)
    written = events(total)
    head = 0
    for chunk_start in range(0, total, 10):
        head = store.append(written[chunk_start : chunk_start + 10], expected_head=head)
    assert head == total
    assert contents(store) == numbered(written)
    assert list(store.read(after=5, until=20)) == numbered(written[5:20], first_position=6)
    assert [position for position, _ in store.read_encoded(after=13)] == list(range(14, total + 1))
    pages = list(store.read_pages())
    assert [event for page in pages for event in page] == written
    assert all(len(page) <= 7 for page in pages)
    assert [event for page in store.read_pages(after=5, until=20) for event in page] == written[5:20]


def test_read_pages_decodes_a_fetched_page_in_parts(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetched page (7 rows here) is decoded and yielded a few events at a
    time (3 here), in order, none twice, across fetched pages and windows."""
    monkeypatch.setattr(recorder_module, "read_page_events_max", 7)
    monkeypatch.setattr(recorder_module, "decoded_page_events_max", 3)
    written = events(17)
    store.append(written, expected_head=0)
    pages = list(store.read_pages())
    assert [event for page in pages for event in page] == written
    if isinstance(store, recorder_module.RecorderStore):
        assert [len(page) for page in pages] == [3, 3, 1, 3, 3, 1, 3]
    assert [event for page in store.read_pages(after=2, until=16) for event in page] == written[2:16]


def test_read_positions_gives_the_events_at_the_positions_asked_in_order(store: EventStore) -> None:
    written = events(12)
    store.append(written, expected_head=0)
    encoded = dict(store.read_encoded())
    asked = [9, 2, 2, 12, 5, 1]  # any order, a repeat
    assert store.read_positions(asked) == [(position, encoded[position]) for position in (1, 2, 5, 9, 12)]
    assert [decode_event(data) for _, data in store.read_positions(range(3, 7))] == written[2:6]
    assert store.read_positions([0, -3, 13, 99]) == []  # no event there: left out
    assert store.read_positions([]) == []
    assert store.read_positions([0, 7, 40]) == [(7, encoded[7])]


def test_read_positions_crosses_query_chunks(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recorder_module, "read_positions_query_max", 4)
    written = events(30)
    store.append(written, expected_head=0)
    asked = list(range(30, 0, -3)) + [31]
    assert [position for position, _ in store.read_positions(asked)] == sorted(asked)[:-1]
    assert [decode_event(data) for _, data in store.read_positions(range(1, 31))] == written


def test_a_stale_expected_head_is_refused_and_writes_nothing(store: EventStore) -> None:
    store.append(events(3), expected_head=0)
    before = contents(store)
    for stale in (0, 2, 4, 10):
        with pytest.raises(ConcurrencyError):
            store.append(events(2, first_seq=50), expected_head=stale)
        assert store.head() == 3
        assert contents(store) == before
    assert store.append(events(1, first_seq=60), expected_head=3) == 4


def test_a_second_store_with_a_stale_head_is_refused(
    store_kind: str, store_url: str, open_url: OpenUrl
) -> None:
    if store_kind == "memory":
        pytest.skip("a memory store is private to its object")
    first, second = open_url(store_url), open_url(store_url)
    first.append(events(2), expected_head=0)
    assert second.head() == 2  # `second` now believes the head is 2...
    first.append(events(1, first_seq=3), expected_head=2)  # ...but it moved on
    before = contents(first)
    with pytest.raises(ConcurrencyError):
        second.append(events(2, first_seq=10), expected_head=2)
    assert contents(second) == before == contents(first)
    assert second.head() == 3
    # Having caught up, the second store appends; the first sees it.
    assert second.append(events(1, first_seq=20), expected_head=3) == 4
    assert first.head() == 4
    assert first.append(events(1, first_seq=21), expected_head=4) == 5


def test_events_persist_across_close_and_reopen(
    store_kind: str, store_url: str, open_url: OpenUrl
) -> None:
    if store_kind == "memory":
        pytest.skip("a memory store does not outlive its object")
    written = events(4)
    store = open_url(store_url)
    store.append(written, expected_head=0)
    store.close()
    reopened = open_url(store_url)
    assert reopened.head() == 4
    assert contents(reopened) == numbered(written)
    assert reopened.append(events(1, first_seq=5), expected_head=4) == 5


def test_read_encoded_gives_the_bytes_of_encode_event(store: EventStore) -> None:
    written = events(5)
    store.append(written, expected_head=0)
    encoded = list(store.read_encoded())
    assert encoded == [(position, encode_event(event)) for position, event in numbered(written)]
    assert [(position, decode_event(data)) for position, data in encoded] == contents(store)
    assert all(type(data) is bytes for _, data in encoded)


def test_an_event_that_fails_to_encode_writes_nothing(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(events(1), expected_head=0)
    before = contents(store)
    calls = []

    def encode_failing_on_the_second(event: Event) -> bytes:
        calls.append(event)
        if len(calls) == 2:
            raise ValueError("cannot encode")
        return encode_event(event)

    monkeypatch.setattr(recorder_module, "encode_event", encode_failing_on_the_second)
    with pytest.raises(ValueError, match="cannot encode"):
        store.append(events(3, first_seq=2), expected_head=1)
    monkeypatch.undo()
    assert store.head() == 1
    assert contents(store) == before
    assert store.append(events(1, first_seq=9), expected_head=1) == 2


def test_a_refusal_in_the_middle_of_an_append_writes_none_of_it(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database itself refuses the third row (it reuses position 1): the
    two rows before it, already sent, must be rolled back."""
    store.append(events(1), expected_head=0)
    before = contents(store)
    to_row = MsgspecMapper.to_row

    def third_collides(self: MsgspecMapper, position: int, event):  # type: ignore[no-untyped-def]
        return to_row(self, 1 if position == 4 else position, event)

    monkeypatch.setattr(MsgspecMapper, "to_row", third_collides)
    with pytest.raises(ConcurrencyError):
        store.append(events(4, first_seq=2), expected_head=1)
    monkeypatch.undo()
    assert store.head() == 1
    assert contents(store) == before


# --------------------------------------------------------------------- URLs


def test_a_relative_sqlite_path_is_relative_to_the_working_directory(
    tmp_path, monkeypatch: pytest.MonkeyPatch, open_url: OpenUrl
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    store = open_url("sqlite:///data/events.db?table=custom_events")
    store.append(events(1), expected_head=0)
    assert (tmp_path / "data" / "events.db").exists()


@pytest.mark.parametrize(
    "url",
    [
        "",
        "events.db",
        "mysql://user@host/db",
        "memory://",
        "memory:extra",
        "sqlite:",
        "sqlite://events.db",
        "sqlite:///",
        "sqlite:///events.db?table=Bad-Name",
        "sqlite:///events.db?table=1starts_with_digit",
        "sqlite:///events.db?table=",
        "sqlite:///events.db?table=a&table=b",
        "sqlite:///events.db?colour=blue",
        "memory:?table=x;drop",
        "postgresql://127.0.0.1:5432/test",  # no user
        "postgresql://postgres@127.0.0.1:5432/",  # no database
        "postgresql://postgres@127.0.0.1:port/test",
    ],
)
def test_a_bad_url_raises_store_error(url: str) -> None:
    with pytest.raises(StoreError, match="bad store URL") as caught:
        open_store(url)
    assert "memory:" in str(caught.value) and "sqlite:///" in str(caught.value)


def test_a_missing_sqlite_directory_raises_store_error(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/missing/events.db"
    with pytest.raises(StoreError, match="does not exist"):
        open_store(url)


def test_an_sqlite_path_that_is_a_directory_raises_store_error(tmp_path) -> None:
    with pytest.raises(StoreError):
        open_store(f"sqlite:///{tmp_path}")


def test_an_unreachable_postgres_raises_store_error_with_the_reason() -> None:
    # Port 1 on localhost: nothing listens, the connection is refused at once.
    url = "postgresql://postgres:secret@127.0.0.1:1/test"
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as caught:
        open_store(url)
    message = str(caught.value)
    assert "127.0.0.1:1" in message and "secret" not in message
    assert "refused" in message.lower() or "connect" in message.lower()


def test_the_url_help_names_every_form() -> None:
    for form in ("memory:", "sqlite:///", "sqlite:////", "postgresql://", "table="):
        assert form in store_url_help


# ---------------------------------------------------------------- measurement


def test_a_thousand_single_event_appends_all_land_in_order(tmp_path, open_url: OpenUrl) -> None:
    """One transaction per append (the engine's durable mode); speed is
    measured by bench/run.py, not here."""
    store = open_url(f"sqlite:///{tmp_path}/many.db")
    written = events(1000)
    head = 0
    for event in written:
        head = store.append([event], expected_head=head)
    assert head == store.head() == 1000
    assert [event for _, event in store.read()] == written


def _matching(written: list[Event], wanted: dict[str, list[bytes]], after: int, until: int | None) -> list[tuple[int, bytes]]:
    """What read_matching must give, filtered here in the plainest way."""
    found = []
    for position, event in numbered(written):
        data = encode_event(event)
        needles = wanted.get(type(event).__name__)
        if after < position and (until is None or position <= until) and needles is not None and any(n in data for n in needles):
            found.append((position, data))
    return found


@pytest.mark.parametrize(("after", "until"), [(0, None), (5, 40), (29, None), (60, None)])
def test_read_matching_keeps_the_events_of_the_types_holding_a_needle(store: EventStore, after: int, until: int | None) -> None:
    written = events(60)
    store.append(written, expected_head=0)
    wanted = {
        "TaskDelegated": [b'"task-5"', b'"task-11"', b'"task-59"'],
        "QuestionRaised": [b""],  # every one of the type
        "InputAccepted": [b'"line":7,', b'"absent"'],
        "ActionProposed": [b""],  # a type the log does not hold
    }
    expected = _matching(written, wanted, after, until)
    assert list(store.read_matching(wanted, after, until)) == expected
    assert (after, until) != (0, None) or len(expected) == 3 + 20 + 1  # the case is not vacuous


def test_read_matching_with_many_needles_gives_the_same(store: EventStore) -> None:
    written = events(30)
    store.append(written, expected_head=0)
    many = {"TaskDelegated": [f'"task-{n}"'.encode() for n in range(2, 1200, 3)]}  # over an SQL query's parameters
    assert list(store.read_matching(many)) == _matching(written, many, 0, None) != []
