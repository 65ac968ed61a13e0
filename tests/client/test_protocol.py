"""What a call does, without a server (client/protocol.py is sans-I/O): the
retries and their pauses, the one id every try carries, and a resend
answered `duplicate_input` resolved to its original's record. The same
generators drive the sync and the async client (tests/client/test_serve.py
and test_faults.py run them against real servers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tandem.client import ApiError, Rejected, RetryPolicy, inputs
from tandem.client.protocol import Lost, Pause, Reply, Request, Steps, exchanged, single, submitting

MESSAGE = inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi")


def error(status: int, code: str, retry_after_s: float | None = None) -> Reply:
    return Reply(status, json.dumps({"error": {"code": code, "message": f"{code}, said the server"}}).encode(), retry_after_s)


def answer(position: int, *lines: dict[str, Any]) -> Reply:
    return Reply(200, json.dumps({"position": position, "results": list(lines)}).encode())


def line(first: int, *types: str, accepted: bool = True, reason: str | None = None, at: str = "2026-03-01T09:00:00Z") -> dict[str, Any]:
    return {"line": 1, "at": at, "accepted": accepted, "reason": reason, "events": [{"position": first + n, "type": t} for n, t in enumerate(types)]}


class Server:
    """Answers a call's requests from a script: a list of replies (or a
    function of the request) in order; records the requests and pauses."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []
        self.pauses: list[float] = []

    def run(self, steps: Steps[Any]) -> Any:
        reply: Any = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value
            if isinstance(step, Pause):
                self.pauses.append(step.seconds)
                reply = None
                continue
            self.requests.append(step)
            scripted = self.replies.pop(0)
            reply = scripted(step) if callable(scripted) else scripted


def test_the_pauses_double_from_the_first_are_at_least_retry_after_and_at_most_the_cap() -> None:
    policy = RetryPolicy(attempts_max=8, delay_first_s=0.1, delay_max_s=2.0)
    assert [policy.delay_s(n, None) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    assert [policy.delay_s(n, 1.0) for n in range(1, 6)] == [1.0, 1.0, 1.0, 1.0, 1.6]
    assert policy.delay_s(1, 60.0) == 2.0  # the cap bounds a server's Retry-After too
    with pytest.raises(ValueError, match="attempts_max >= 1"):
        RetryPolicy(attempts_max=0)


def test_a_503_or_a_lost_connection_is_retried_with_the_same_bytes_then_answered() -> None:
    server = Server(error(503, "store_unavailable", 1.0), Lost("ConnectionResetError"), error(503, "commit_unknown", 1.0), answer(4, line(1, "InputAccepted", "MessageQueued")))
    batch = server.run(submitting([MESSAGE], False, RetryPolicy(delay_first_s=0.1), 0))
    assert len(server.requests) == 4 and len({request.body for request in server.requests}) == 1
    assert server.pauses == [1.0, 0.2, 1.0]  # doubling from 0.1, Retry-After the floor
    sent = json.loads(server.requests[0].body or b"")
    assert sent["id"] and batch.inputs[0].id == sent["id"] and "at" not in sent
    result = single(batch)
    assert (result.id, result.position, result.accepted, result.resent) == (sent["id"], 4, True, False)


def test_an_input_with_an_id_keeps_it() -> None:
    server = Server(answer(2, line(1, "InputAccepted")))
    server.run(submitting([inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi", id="mine-1")], False, RetryPolicy(), 0))
    assert json.loads(server.requests[0].body or b"")["id"] == "mine-1"


@pytest.mark.parametrize("refusal", [error(409, "at_before_head"), error(503, "too_many_streams"), error(400, "invalid_input"), error(401, "unauthenticated")])
def test_other_errors_are_raised_at_once(refusal: Reply) -> None:
    server = Server(refusal)
    with pytest.raises(ApiError) as raised:
        server.run(submitting([MESSAGE], False, RetryPolicy(), 0))
    assert raised.value.status == refusal.status and len(server.requests) == 1 and not server.pauses


def test_after_attempts_max_tries_the_last_failure_is_raised() -> None:
    server = Server(*[error(503, "store_unavailable", 1.0)] * 3)
    with pytest.raises(ApiError) as raised:
        server.run(exchanged(Request("GET", "/v1/views"), RetryPolicy(attempts_max=3)))
    assert (raised.value.code, raised.value.retry_after_s, len(server.requests)) == ("store_unavailable", 1.0, 3)
    lost = Server(Lost("timed out"), Lost("timed out"))
    with pytest.raises(ConnectionError, match="timed out"):
        lost.run(exchanged(Request("GET", "/v1/views"), RetryPolicy(attempts_max=2)))


def events_page(events: list[dict[str, Any]], next_after: int | None) -> Reply:
    return Reply(200, json.dumps({"events": events, "next_after": next_after}).encode())


def event(position: int, kind: str, file: str, ident: str, **body: Any) -> dict[str, Any]:
    return {"position": position, "type": kind, "input": {"file": file, "line": 1, "id": ident}, "body": body}


def log(ident: str) -> list[dict[str, Any]]:
    """A log where the first try of `ident` was recorded at 11..13 (its
    answer lost), someone else's input at 14, and the resend's duplicate at 15."""
    record = {"input": {"type": "human.message", "at": "2026-03-01T09:00:05Z", "id": ident}}
    return [
        event(11, "InputAccepted", "http@10", ident, **record),
        event(12, "MessageQueued", "http@10", ident),
        event(13, "DeliveryCreated", "http@10", ident),
        event(14, "InputAccepted", "http@13", "someone-else"),
        event(15, "InputRejected", "http@14", ident, reason="duplicate_input"),
    ]


def read_log(entries: list[dict[str, Any]]) -> Any:
    def reply(request: Request) -> Reply:
        query = dict(part.split("=") for part in request.path.partition("?")[2].split("&"))
        after, limit = int(query["after"]), int(query["limit"])
        page = [entry for entry in entries if after < entry["position"] <= after + limit]
        return events_page(page, page[-1]["position"] if page and page[-1]["position"] < entries[-1]["position"] else None)

    return reply


def test_a_resend_answered_duplicate_input_returns_the_originals_result() -> None:
    ident = "resent-1"
    value = inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi", id=ident)
    duplicate = answer(15, line(15, "InputRejected", accepted=False, reason="duplicate_input", at="2026-03-01T09:00:06Z"))
    server = Server(Lost("timed out"), duplicate, read_log(log(ident)), read_log(log(ident)))
    result = single(server.run(submitting([value], False, RetryPolicy(), 9)))
    assert (result.accepted, result.resent, result.reason, result.position) == (True, True, None, 13)
    assert [(e.position, e.type) for e in result.events] == [(11, "InputAccepted"), (12, "MessageQueued"), (13, "DeliveryCreated")]
    assert result.at.isoformat() == "2026-03-01T09:00:05+00:00"  # the original's, not the duplicate's
    searched = [request.path for request in server.requests[2:]]
    assert searched == ["/v1/events?after=9&limit=5", "/v1/events?after=10&limit=1000"]  # back to the head seen, then its commit


def test_a_duplicate_the_first_try_meets_is_a_rejection() -> None:
    server = Server(answer(15, line(15, "InputRejected", accepted=False, reason="duplicate_input")))
    with pytest.raises(Rejected) as rejected:
        single(server.run(submitting([MESSAGE], False, RetryPolicy(), 0)))
    assert rejected.value.code == "duplicate_input" and "already recorded" in rejected.value.message
    assert len(server.requests) == 1  # no search: this call's own first try was never recorded


def test_a_resend_whose_original_is_not_after_the_head_seen_is_a_rejection() -> None:
    """Recorded before this call began (the id was used before): not this
    call's try, so its duplicate_input stands."""
    ident = "resent-2"
    value = inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi", id=ident)
    duplicate = answer(15, line(15, "InputRejected", accepted=False, reason="duplicate_input"))
    server = Server(error(503, "commit_unknown", 0.0), duplicate, read_log(log(ident)))
    with pytest.raises(Rejected) as rejected:
        single(server.run(submitting([value], False, RetryPolicy(), 13)))
    assert rejected.value.code == "duplicate_input" and rejected.value.input.id == ident
    assert [request.path for request in server.requests[2:]] == ["/v1/events?after=13&limit=1"]


def test_the_work_queue_structs_name_the_servers_fields() -> None:
    """The client's work queue Structs (lenient: a key a newer server adds
    is ignored) name exactly the fields of the server's (strict) ones, so
    they cannot drift apart unnoticed."""
    from tandem.client import results
    from tandem.projections import rows, work

    pairs = [(results.Envelope, rows.ActionEnvelope), (results.WorkReply, work.Reply),
             (results.WorkItem, work.WorkItem), (results.Work, work.WorkBody)]
    for mine, theirs in pairs:
        assert mine.__struct_fields__ == theirs.__struct_fields__, (mine.__name__, theirs.__name__)
