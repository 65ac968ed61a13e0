"""Slow clients against a real `tandem serve` (issue 22).

Seen by an operator: a connection that sent half a request head, or a body a
byte at a time, was held for ever (500 such connections held, none closed
after 10 s). The server now gives a request's head `--head-timeout` seconds
to arrive (from the connection's start, or from the first byte of the next
request on a kept-alive one) and its body `--body-timeout` seconds (from the
end of its head): past them the connection is closed, a late body answered
408 `request_timeout` first, and nothing is recorded. What lasts is a
response (the live stream), never cut. The tests use 1 s limits to run fast.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from tandem.adapters.client import Message
from tests.e2e.serving import Served, store_head
from tests.e2e.test_serve_faults import sockets_of

head_timeout_s = 1.0
body_timeout_s = 1.0
slack_s = 4.0  # the server's loop, and this machine's other work
half_head = b"GET /v1/health HTTP/1.1\r\nHost: tandem\r\nAccept: application/"
limits = ("--head-timeout", str(head_timeout_s), "--body-timeout", str(body_timeout_s))


def served(tmp_path: Path) -> Served:
    return Served(tmp_path, f"sqlite:///{tmp_path}/events.db", "--no-runtime-inputs", *limits)


def connect(server: Served) -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=head_timeout_s + slack_s)


def closed_by_server(connection: socket.socket) -> tuple[bytes, float]:
    """What the server sent until it closed the connection, and when that
    was (from now); an AssertionError if it is still open after the slack."""
    started = time.monotonic()
    received = b""
    try:
        while chunk := connection.recv(65_536):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"still open after {time.monotonic() - started:.1f} s; received {received!r}") from None
    return received, time.monotonic() - started


def held(server: Served, ports: set[int]) -> int:
    """How many of the connections from `ports` the server process still holds."""
    assert server.process is not None
    return sum(1 for _, remote, _ in sockets_of(server.process.pid) if remote in ports)


def test_a_half_sent_head_is_closed_after_the_head_timeout(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        silent, half = connect(server), connect(server)
        half.sendall(half_head)
        for connection in (half, silent):  # nothing at all is a head not sent either
            received, after = closed_by_server(connection)
            assert received == b"" and after < head_timeout_s + slack_s
        kept = connect(server)  # a kept-alive connection: the next request's head has its own deadline
        kept.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: tandem\r\n\r\n")
        answer = kept.recv(65_536)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
        kept.sendall(half_head)
        time.sleep(0.2)
        received, after = closed_by_server(kept)
        assert after < head_timeout_s + slack_s
        assert server.client("human").health()["status"] == "ok"  # the server is well


def test_a_body_slower_than_the_body_timeout_is_answered_408_and_records_nothing(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        body = b'{"type": "tick"}'
        connection = connect(server)
        connection.sendall(
            b"POST /v1/inputs HTTP/1.1\r\nHost: tandem\r\nContent-Type: application/json\r\n"
            + b"Authorization: Bearer " + server.tokens["daemon"].encode()
            + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
        )  # fmt: skip
        started = time.monotonic()
        sent = 0
        try:
            while sent < len(body) - 1 and time.monotonic() - started < body_timeout_s + slack_s:
                connection.sendall(body[sent : sent + 1])  # a byte a quarter second: the whole would take 4 s
                sent += 1
                time.sleep(0.25)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received, _ = closed_by_server(connection)
        assert time.monotonic() - started < body_timeout_s + slack_s
        assert received.startswith(b"HTTP/1.1 408 "), received
        assert b'"code":"request_timeout"' in received and b"connection: close" in received.lower(), received
        assert sent < len(body) - 1  # cut while the body was still coming
        assert server.client("human").health()["position"] == 0
    assert store_head(server.store_url) == 0


def test_normal_requests_and_a_long_stream_are_not_cut(tmp_path: Path) -> None:
    lasting_s = 3 * max(head_timeout_s, body_timeout_s)
    with served(tmp_path) as server:
        messages: list[Message] = []

        def read() -> None:
            for message in server.client("human").stream(last_event_id=0, timeout_s=lasting_s + slack_s):
                messages.append(message)
                if len(messages) == 2:
                    return

        reader = threading.Thread(target=read)
        reader.start()
        client = server.client("daemon")
        assert client.submit({"type": "tick"})["results"][0]["accepted"] is True
        time.sleep(lasting_s)  # the stream outlasts both limits
        body = b'{"type": "tick"}'
        with connect(server) as connection:  # a body in two parts within the limit is fine
            connection.sendall(
                b"POST /v1/inputs HTTP/1.1\r\nHost: tandem\r\nContent-Type: application/json\r\n"
                + b"Authorization: Bearer " + server.tokens["daemon"].encode()
                + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:5]
            )  # fmt: skip
            time.sleep(body_timeout_s / 3)
            connection.sendall(body[5:])
            assert connection.recv(65_536).startswith(b"HTTP/1.1 200")
        reader.join(timeout=slack_s)
        assert not reader.is_alive()
        assert [message.id for message in messages] == [1, 2], messages


def test_two_hundred_half_open_connections_are_all_closed(tmp_path: Path) -> None:
    count = 200
    with served(tmp_path) as server:
        connections = [connect(server) for _ in range(count)]
        for connection in connections:
            connection.sendall(half_head)
        ports = {connection.getsockname()[1] for connection in connections}
        time.sleep(0.3)
        assert held(server, ports) == count  # the server took them all
        deadline = time.monotonic() + head_timeout_s + slack_s
        while held(server, ports) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert held(server, ports) == 0, f"{held(server, ports)} of {count} still held"
        for connection in connections:
            connection.close()
        assert server.client("human").health()["status"] == "ok"
