"""What the search index holds (adapters/search/documents.py): words cut
and folded once (so every backend holds the same), the text fields of
each input kind found from the declared types (`Text`, never an
`Identifier`), bounded, and the documents a run of events makes, however
it is cut into batches."""

from __future__ import annotations

import datetime

from tandem.adapters.search.documents import (
    TEXT_FIELDS,
    Documents,
    input_texts,
    input_words,
    text_chars_indexed_max,
    word_chars_max,
    words_of,
)
from tandem.domain import events as ev
from tandem.domain import inputs as inp

AT = datetime.datetime(2026, 5, 1, tzinfo=datetime.timezone.utc)


def fields(kind: type) -> set[str]:
    return {name for name, _ in TEXT_FIELDS[kind]}


def test_words_are_runs_of_letters_and_digits_case_folded_and_cut() -> None:
    assert list(words_of("Straße ÉTÉ op-1 a_b\u202eX 東京")) == ["strasse", "été", "op", "1", "a", "b", "x", "東京"]
    assert list(words_of("x" * 100)) == ["x" * word_chars_max]
    assert list(words_of("<script>alert(1)</script>")) == ["script", "alert", "1", "script"]


def test_the_text_fields_are_those_declared_text() -> None:
    assert fields(inp.DelegateTask) == {"goal", "done_when", "grant", "fallback_decisions"}  # grant: its write_roots
    assert fields(inp.RaiseQuestion) == {"blocking_reason"}  # not its recipient, key or task (identifiers)
    assert fields(inp.AnswerQuestion) == {"answer"}
    assert {"text", "scope", "fingerprint", "status"} <= fields(inp.Observe) and "source_id" not in fields(inp.Observe)
    assert fields(inp.ProposeCard) == {"summary"}


def delegate(goal: str, **more: object) -> inp.DelegateTask:
    grant = {"grant_id": "g", "allowed_operations": ["worker.start"], "write_roots": ["/repo/Zeppelin"]}
    return inp.DelegateTask(at=AT, id="in-1", task_id="t-1", conversation_id="fg", message_refs=[], goal=goal,
                            done_when=["tests pass"], grant=inp.GrantRequest(**grant), **more)  # type: ignore[arg-type]  # fmt: skip


def test_an_inputs_words_are_its_texts_then_its_id() -> None:
    value = delegate("Build the form", fallback_decisions={"db": "Use SQLite"})
    assert list(input_texts(value)) == [("goal", "Build the form"), ("done_when", "tests pass"), ("grant", "/repo/Zeppelin"), ("fallback_decisions", "Use SQLite")]
    assert input_words(value) == ["build", "the", "form", "tests", "pass", "repo", "zeppelin", "use", "sqlite", "in", "1"]


def test_an_inputs_text_is_bounded() -> None:
    value = delegate("word " * (text_chars_indexed_max // 5 + 100))
    texts = list(input_texts(value))
    assert sum(len(text) for _, text in texts) == text_chars_indexed_max and [name for name, _ in texts] == ["goal"]


def record(seq: int, value: inp.Input) -> ev.InputAccepted:
    return ev.InputAccepted(seq=seq, file=None, line=None, input=value)


def events() -> list[tuple[int, ev.Event]]:
    """Two inputs (the second's event naming a question and a task), then a batch's marker."""
    ask = inp.RaiseQuestion(at=AT, actor="background", task_id="t-1", question_key="db", recipient="human",
                            blocking_reason="Which Zeppelin?", affected="task", evidence_revision=1)  # fmt: skip
    raised = ev.QuestionRaised(cause=2, task_id="t-1", question_key="db", recipient="human", blocking_reason="Which Zeppelin?",
                               affected="task", evidence_revision=1, times_raised=1, first_seen_at=AT, reopened=False)  # fmt: skip
    return [
        (1, record(1, delegate("Build the form"))),
        (2, record(2, ask)),
        (3, raised),
        (4, ev.SourceProgressed(file="f", line=2, offset=10, digest="d")),
    ]


def test_documents_are_the_same_however_the_events_are_cut() -> None:
    whole = Documents(0, None).batch(events())
    assert [(d.position, d.last, d.kind, d.actor) for d in whole.inputs] == [(1, 1, "task.delegate", "human"), (2, 3, "question.raise", "background")]
    question = whole.things[("question", "t-1/db")]
    assert (question.first, question.last) == (3, 3)
    assert question.words[:3] == ["t", "1", "db"] and "zeppelin" in question.words  # its id's, then its input's
    documents = Documents(0, None)
    first, second = documents.batch(events()[:2]), documents.batch(events()[2:])
    assert second.extended == (2, 3) and [d.last for d in first.inputs] == [1, 2]
    assert second.things == whole.things and documents.open_input is None  # the marker closed the input
    resumed = Documents(2, 2, input_words(events()[1][1].input)).batch(events()[2:])  # type: ignore[union-attr]
    assert resumed.things == whole.things and resumed.extended == (2, 3)
