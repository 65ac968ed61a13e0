"""Faults against a real `tandem serve` process (docs/api.md).

Bodies over the limits (also chunked, without Content-Length), bad bytes and
JSON nested far too deep, a stream client that never reads, SIGKILL while a
big batch is being decided, a store that fails mid-request and comes back
(PostgreSQL sessions terminated; SQLite out of file size), and health while
a big batch is decided. Wherever a request is refused, nothing is recorded:
the store's head, read from the store itself, is unchanged.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import signal
import socket
import statistics
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tandem.adapters.client import ApiError, Client
from tandem.adapters.serve import shutdown_grace_s
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tests.e2e.serving import Served, store_head, tandem

JSON = "application/json"
NDJSON = "application/x-ndjson"
MiB = 1_048_576
single_body_bytes_max = MiB  # API.md: a body over 1 MiB (single) or 16 MiB (batch) is 413
batch_body_bytes_max = 16 * MiB


# ------------------------------------------------------------------ helpers


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory}/events.db"



def recorded(url: str, prefix: str) -> tuple[Counter[str], Counter[str]]:
    """Of the inputs whose id starts with `prefix`: how often each was
    accepted, and how often each was recorded as rejected."""
    accepted: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    store = open_store(url)
    try:
        for _, event in store.read():
            if type(event) is ev.InputAccepted or type(event) is ev.InputRejected:
                identifier = event.input.id
                if identifier is not None and identifier.startswith(prefix):
                    (accepted if type(event) is ev.InputAccepted else rejected)[identifier] += 1
    finally:
        store.close()
    return accepted, rejected


def open_conversation(server: Served) -> None:
    server.client("daemon").submit(
        {"type": "conversation.open", "conversation_id": "fg", "role": "foreground", "context_limit": 200_000, "reserve": 20_000}
    )


def message(name: str, text: str = "hello", **fields: object) -> dict[str, object]:
    return {"type": "human.message", "conversation_id": "fg", "message_id": name, "text": text, **fields}


def encoded(value: dict[str, object]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def ndjson(values: list[dict[str, object]]) -> bytes:
    return b"".join(encoded(value) + b"\n" for value in values)


def post_raw(
    server: Served, body: bytes, content_type: str = JSON, chunked: bool = False, actor: str = "human"
) -> tuple[int, dict[str, object]]:
    """POST /v1/inputs byte for byte (chunked: Transfer-Encoding, no
    Content-Length); the status and the decoded answer."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        connection.putrequest("POST", "/v1/inputs")
        connection.putheader("Authorization", f"Bearer {server.tokens[actor]}")
        connection.putheader("Content-Type", content_type)
        if chunked:
            connection.putheader("Transfer-Encoding", "chunked")
        else:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        try:
            if chunked:
                piece_bytes = 256 * 1024
                for start in range(0, len(body), piece_bytes):
                    piece = body[start : start + piece_bytes]
                    connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
                connection.send(b"0\r\n\r\n")
            else:
                connection.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer (413) before it took everything
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def refused(server: Served, body: bytes, content_type: str = JSON, chunked: bool = False) -> tuple[int, str, dict[str, object]]:
    status, answer = post_raw(server, body, content_type, chunked)
    error = answer.get("error")
    assert isinstance(error, dict), answer
    return status, str(error["code"]), answer


def assert_serving(server: Served, name: str) -> None:
    """The server still answers and still commits."""
    client = server.client("human")
    assert client.health()["status"] == "ok"
    result = client.submit(message(name))
    assert result["results"][0]["accepted"], result


# ------------------------------------------------------------- 1. the limits


def padded(value: dict[str, object], size: int) -> bytes:
    """`value` as JSON, padded with spaces to exactly `size` bytes (still one valid input)."""
    data = encoded(value)
    assert len(data) <= size
    return data + b" " * (size - len(data))


def test_bodies_over_the_limits_are_413_also_chunked_and_record_nothing(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with Served(tmp_path, url) as server:
        open_conversation(server)

        # Exactly at the limits: accepted (the limit is the body's size, nothing else).
        status, answer = post_raw(server, padded(message("at-single-limit"), single_body_bytes_max))
        assert status == 200 and answer["results"][0]["accepted"], answer  # type: ignore[index]
        lines = [padded(message(f"at-batch-limit-{number}"), MiB - 1) + b"\n" for number in range(16)]
        status, answer = post_raw(server, b"".join(lines), NDJSON)
        assert len(b"".join(lines)) == batch_body_bytes_max
        assert status == 200 and len(answer["results"]) == 16, answer  # type: ignore[arg-type]

        head = store_head(url)
        over_single = padded(message("over-single"), single_body_bytes_max + 1)
        over_batch = b"".join(lines) + b" "  # one byte more
        for chunked in (False, True):
            status, code, answer = refused(server, over_single, JSON, chunked)
            assert (status, code) == (413, "too_large"), answer
            assert str(single_body_bytes_max) in str(answer["error"]["message"])  # type: ignore[index]
            status, code, answer = refused(server, over_batch, NDJSON, chunked)
            assert (status, code) == (413, "too_large"), answer
            assert str(batch_body_bytes_max) in str(answer["error"]["message"])  # type: ignore[index]
        assert store_head(url) == head
        assert_serving(server, "after-413")


# --------------------------------------------------- 2. bad bytes, deep JSON


def nested_object(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def delegate(constraints: bytes) -> bytes:
    return (
        b'{"type":"task.delegate","task_id":"t1","conversation_id":"fg","message_refs":[],"goal":"g",'
        b'"done_when":["done"],"grant":{"grant_id":"g1","allowed_operations":[],"write_roots":[]},"constraints":'
        + constraints
        + b"}"
    )


def test_bad_utf8_deep_json_unknown_types_and_wrong_fields_are_400_naming_the_line(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with Served(tmp_path, url) as server:
        open_conversation(server)
        head = store_head(url)

        def invalid(body: bytes, content_type: str = JSON) -> list[dict[str, object]]:
            status, code, answer = refused(server, body, content_type)
            assert (status, code) == (400, "invalid_input"), answer
            errors = answer["errors"]
            assert isinstance(errors, list) and errors, answer
            first = errors[0]
            assert f"line {first['line']}: {first['message']}" in str(answer["error"]["message"])  # type: ignore[index]
            return errors

        bad = encoded(message("bad-utf8", "caf\u00e9")).replace("\u00e9".encode(), b"\xff")
        where = bad.index(b"\xff")
        assert invalid(bad) == [{"line": 1, "message": f"invalid UTF-8 at byte {where}"}]
        batch = ndjson([message("good-1")]) + bad + b"\n" + ndjson([message("good-3")])
        assert invalid(batch, NDJSON) == [{"line": 2, "message": f"invalid UTF-8 at byte {where}"}]

        deep = "nested deeper than 64 levels"
        assert deep in str(invalid(nested_object(100_000))[0]["message"])  # 500 KB: decided in a worker thread
        assert "got `array`" in str(invalid(b"[" * 100_000 + b"]" * 100_000)[0]["message"])
        for levels in (1_000, 100_000):
            errors = invalid(delegate(nested_object(levels)))
            assert errors == [{"line": 1, "message": f"{deep} - at `$.constraints.a.a.a\u2026`"}], errors
            errors = invalid(ndjson([message("good-1")]) + delegate(nested_object(levels)) + b"\n", NDJSON)
            assert [error["line"] for error in errors] == [2], errors
        arrays = delegate(b'{"a":' + b"[" * 1_000 + b"]" * 1_000 + b"}")
        assert invalid(arrays) == [{"line": 1, "message": f"{deep} - at `$.constraints.a[0][0]\u2026`"}]

        assert invalid(b'{"type":"no.such","conversation_id":"fg"}') == [{"line": 1, "message": "unknown type 'no.such'"}]
        assert invalid(encoded(message(5))) == [  # type: ignore[arg-type]
            {"line": 1, "message": "Expected `str`, got `int` - at `$.message_id`"}
        ]
        errors = invalid(ndjson([message("good-1"), {"type": "no.such"}, message(7)]), NDJSON)  # type: ignore[arg-type]
        assert [error["line"] for error in errors] == [2, 3], errors

        assert store_head(url) == head
        assert "Traceback" not in server.log() and "internal error" not in server.log()
        assert_serving(server, "after-400s")


# ------------------------------------------------- 3. a client that never reads


def stalled_stream(server: Served, last_event_id: int | None = None) -> socket.socket:
    """A raw `/v1/stream` request whose client never reads a byte (a small
    receive buffer, so that the server's side fills up soon), once the
    server has answered 200 (seen with MSG_PEEK: nothing is taken)."""
    parts = urlsplit(server.url)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect((parts.hostname, parts.port))
    resume = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id is not None else ""
    raw.sendall(
        f"GET /v1/stream HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {server.tokens['human']}\r\n{resume}\r\n".encode()
    )
    raw.settimeout(10)
    status_line = raw.recv(12, socket.MSG_PEEK | socket.MSG_WAITALL)
    if status_line != b"HTTP/1.1 200":
        raw.close()
        raise AssertionError(f"the stream was refused: {status_line!r}")
    return raw


def stream_accepted(server: Served) -> bool:
    """Whether a new stream is accepted now (it is closed at once)."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", "/v1/stream", headers={"Authorization": f"Bearer {server.tokens['human']}"})
        response = connection.getresponse()
        if response.status == 200:
            return True
        assert response.status == 503 and json.loads(response.read())["error"]["code"] == "too_many_streams"
        return False
    finally:
        connection.close()


def until(condition, timeout_s: float, what: str, pause_s: float = 0.02) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(pause_s)


def sockets_of(pid: int) -> list[tuple[int, int, int]]:
    """The (local port, remote port, bytes in the send queue) of every TCP
    connection process `pid` holds open."""
    inodes = set()
    for descriptor in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[9] in inodes:
                local, remote = (int(address.rsplit(":", 1)[1], 16) for address in fields[1:3])
                found.append((local, remote, int(fields[4].split(":")[0], 16)))
    return found


def server_holds(server: Served, client: socket.socket) -> bool:
    """Whether the server process still holds the connection of `client`
    (looked up in /proc: the client itself reads nothing)."""
    assert server.process is not None
    port = client.getsockname()[1]
    return any(remote == port for _, remote, _ in sockets_of(server.process.pid))


def send_queue(server: Served, client: socket.socket) -> int:
    """The bytes the kernel holds for `client` in the server's send queue."""
    assert server.process is not None
    port = client.getsockname()[1]
    return sum(queued for _, remote, queued in sockets_of(server.process.pid) if remote == port)


def test_a_stream_client_that_never_reads_slows_no_commit_and_is_cut_off(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    text = "x" * 2_000
    inputs_per_commit = 20  # a commit's message lists its inputs: ~1.9 KB a message
    with Served(tmp_path, url, "--stream-clients-max", "2") as server:
        open_conversation(server)
        poster = server.client("human")
        made = iter(range(1_000_000))

        def commit() -> tuple[float, int]:
            number = next(made)
            batch = [message(f"m{number}-{line}", text) for line in range(inputs_per_commit)]
            started = time.perf_counter()
            result = poster.submit_batch(batch)
            return time.perf_counter() - started, int(result["position"])

        alone = [commit()[0] for _ in range(150)]

        head = int(poster.health()["position"])
        received: list[tuple[int | None, str]] = []

        def read() -> None:
            for change in server.client("human").stream(last_event_id=head, timeout_s=120):
                received.append((change.id, change.event))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        positions = [commit()[1]]
        until(lambda: len(received) == 1, 10, "the reader's first message")
        stalled = stalled_stream(server)
        assert not stream_accepted(server)  # both places are taken

        # Commit until the stalled client is cut off: a third stream is then accepted.
        with_stalled: list[float] = []
        cut_off_after = None
        for number in range(1, 8_001):
            elapsed, position = commit()
            with_stalled.append(elapsed)
            positions.append(position)
            if number % 100 == 0 and stream_accepted(server):
                cut_off_after = number
                break
        assert cut_off_after is not None, "the stalled stream was never cut off (it still holds a place)"
        assert statistics.median(with_stalled) < 3 * statistics.median(alone), (
            f"median commit {statistics.median(with_stalled) * 1e3:.2f} ms with a stalled stream, "
            f"{statistics.median(alone) * 1e3:.2f} ms without"
        )
        until(lambda: not server_holds(server, stalled), 10, "the server to drop the stalled client's connection")
        stalled.close()

        # One more client that never reads, resuming 999 commits back (~1.9 MB at
        # once), then more commits, until the kernel's buffer for it is full but
        # it is not 1,000 messages behind yet: its stream waits in a send that
        # never completes, where only dropping the connection ends it.
        second: list[socket.socket] = []

        def resumed() -> bool:  # a probe's place is freed once the server saw it close
            try:
                second.append(stalled_stream(server, last_event_id=positions[-1_000]))
            except AssertionError:
                return False
            return True

        until(resumed, 10, "a place for a second stalled client")
        queued = [send_queue(server, second[0])]
        while len(queued) < 4 or queued[-1] > queued[-4]:  # still growing over the last 3 x 25 commits
            assert len(queued) < 200, f"the server's send queue for a client that never reads kept growing: {queued}"
            positions.extend(commit()[1] for _ in range(25))
            queued.append(send_queue(server, second[0]))
        positions.extend(commit()[1] for _ in range(100))  # past the transport's own buffer (64 KiB)
        assert not stream_accepted(server)  # not cut off: it holds its place
        until(lambda: received[-1][0] == positions[-1], 30, "the reader to catch up")
        # The stop drops the client that never reads at once (it does not
        # wait for it: uvicorn would, up to its graceful shutdown), and then
        # ends as any stop does, writing its snapshot at the head (here of
        # ~150,000 events holding ~70,000 queued 2 KB messages: seconds of
        # work that grow with a loaded machine, not with the client).
        assert server.process is not None
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        until(lambda: server.process.poll() is not None or not server_holds(server, second[0]), 5,
              "the stop to drop the client that never reads")  # fmt: skip
        dropped_s = time.monotonic() - started
        assert server.process.wait(timeout=shutdown_grace_s) == 0
        stop_s = time.monotonic() - started
        assert stop_s < shutdown_grace_s, f"SIGTERM took {stop_s:.1f} s with a client that never reads"
        second[0].close()
        reader.join(10)
        assert not reader.is_alive()
    # The other client saw every commit, in order, and no reset.
    assert received == [(position, "change") for position in positions], (len(received), len(positions))
    print(
        f"\nstalled stream cut off after {cut_off_after} commits of {inputs_per_commit} inputs; median commit "
        f"{statistics.median(alone) * 1e3:.2f} ms alone, {statistics.median(with_stalled) * 1e3:.2f} ms with it; "
        f"SIGTERM {stop_s:.2f} s, the client that never reads dropped after {dropped_s:.2f} s"
    )


# ------------------------------------------------------ 4. SIGKILL mid-batch


batch_inputs = 20_000  # ~2 MB; decided in a worker thread for about half a second here


def test_sigkill_while_a_batch_is_decided_leaves_all_or_nothing_and_a_retry_applies_once(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with Served(tmp_path, url, name="setup") as server:
        open_conversation(server)
    outcomes = []
    # Early in the decision, then late (perhaps in the commit itself); a kill
    # that came after the answer does not count, and is tried again.
    for attempt, delay_s in enumerate((0.05, 0.35, 0.1, 0.25, 0.15, 0.2)):
        prefix = f"kill{attempt}-"
        batch = [message(f"{prefix}{number}", id=f"{prefix}{number}") for number in range(batch_inputs)]
        body = ndjson(batch)
        server = Served(tmp_path, url, name=f"attempt{attempt}").start()
        answered: list[int] = []
        sent = threading.Event()

        def post() -> None:
            parts = urlsplit(server.url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            try:
                headers = {"Authorization": f"Bearer {server.tokens['human']}", "Content-Type": NDJSON}
                connection.request("POST", "/v1/inputs", body, headers)
                sent.set()
                answered.append(connection.getresponse().status)
            except (http.client.HTTPException, OSError):
                pass  # the server died with the request
            finally:
                sent.set()
                connection.close()

        poster = threading.Thread(target=post)
        try:
            poster.start()
            assert sent.wait(30)
            time.sleep(delay_s)
            in_flight = not answered
            assert server.process is not None
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait(30)
            poster.join(30)
        finally:
            server.kill()
        accepted, rejected = recorded(url, prefix)
        assert not rejected
        assert sum(accepted.values()) in (0, batch_inputs), f"half a batch recorded: {sum(accepted.values())} inputs"
        committed = bool(accepted)
        assert set(accepted.values()) <= {1}

        with Served(tmp_path, url, name=f"retry{attempt}") as again:
            retried = again.client("human").submit_batch(batch)
        outcome = Counter((result["accepted"], result["reason"]) for result in retried["results"])
        assert outcome == Counter({(False, "duplicate_input") if committed else (True, None): batch_inputs}), outcome
        accepted, rejected = recorded(url, prefix)
        assert accepted == Counter({f"{prefix}{number}": 1 for number in range(batch_inputs)})  # each applied once
        assert sum(rejected.values()) == (batch_inputs if committed else 0)  # the retry's duplicates, recorded
        outcomes.append((delay_s, in_flight, committed))
        if sum(in_flight for _, in_flight, _ in outcomes) == 2:
            break
    assert sum(in_flight for _, in_flight, _ in outcomes) == 2, f"the kills landed after the answer: {outcomes}"
    assert tandem("verify", "--store", url).returncode == 0
    print(f"\nSIGKILL outcomes (delay after sending, no answer yet, batch committed): {outcomes}")


# -------------------------------------------- 5. a store that fails, then comes back


def test_sqlite_out_of_file_size_is_503_nothing_recorded_then_recovers(tmp_path: Path) -> None:
    """RLIMIT_FSIZE set on the server process just above its database and WAL
    (Python ignores SIGXFSZ, so SQLite's write fails with EFBIG: "disk I/O
    error"), then lifted."""
    url = sqlite_url(tmp_path)
    text = "y" * 2_000
    with Served(tmp_path, url) as server:
        open_conversation(server)
        client = server.client("human")
        for number in range(20):
            client.submit(message(f"before-{number}", text, id=f"before-{number}"))
        assert server.process is not None
        pid = server.process.pid
        sizes = [path.stat().st_size for path in tmp_path.glob("events.db*")]
        original = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (max(sizes) + 64 * 1024, original[1]))
        try:
            failed = None
            head = store_head(url)
            for number in range(2_000):
                try:
                    result = client.submit(message(f"full-{number}", text, id=f"full-{number}"))
                except ApiError as error:
                    assert (error.status, error.code) == (503, "store_unavailable"), error
                    assert "nothing was recorded" in error.message
                    failed = number
                    break
                head = int(result["position"])
            assert failed is not None, "the file size limit never made a commit fail"
            assert store_head(url) == head
            accepted, rejected = recorded(url, "full-")
            assert f"full-{failed}" not in accepted and not rejected
            assert sorted(accepted) == sorted(f"full-{number}" for number in range(failed))
            with pytest.raises(ApiError) as again:
                client.submit(message("still-full", text))
            assert again.value.code == "store_unavailable"
            assert store_head(url) == head
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, original)
        retried = client.submit(message(f"full-{failed}", text, id=f"full-{failed}"))
        assert retried["results"][0]["accepted"], retried
        assert store_head(url) == int(retried["position"]) == head + len(retried["results"][0]["events"])
        accepted, _ = recorded(url, "full-")
        assert accepted[f"full-{failed}"] == 1
        assert_serving(server, "after-full")
    verified = tandem("verify", "--store", url)
    assert verified.returncode == 0 and "clean" in verified.stdout, verified.stdout + verified.stderr


def server_sessions(connection, server: Served) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """The PostgreSQL sessions (backend pid: application_name) that the
    server process opened: matched by their client port, so that no other
    test's session is touched."""
    assert server.process is not None
    ports = {local for local, _, _ in sockets_of(server.process.pid)}
    rows = connection.execute(
        "SELECT pid, client_port, application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchall()
    return {pid: name for pid, port, name in rows if port in ports}


@pytest.mark.postgres
def test_postgres_sessions_terminated_between_requests(tmp_path: Path, postgres_store: str) -> None:
    """What a terminated session does: a write, and a read, is tried once
    more on a new pool (the store's `_once_more`), so both succeed. The
    writer lock's own session is left alone."""
    import psycopg

    from tests.integration.conftest import postgres_url

    url = postgres_store
    with Served(tmp_path, url) as server, psycopg.connect(postgres_url(), autocommit=True) as admin:
        open_conversation(server)
        client = server.client("human")
        client.submit(message("pg-0", id="pg-0"))
        client.events(0)  # the reader's pool has its session now
        table = url.rsplit("table=", 1)[1]
        (lock_backend,) = admin.execute(f'SELECT backend_pid FROM "{table}_writer"').fetchone()  # type: ignore[misc]
        sessions = server_sessions(admin, server)
        assert sessions.get(lock_backend) == "tandem writer lock", sessions
        searching = [pid for pid, name in sessions.items() if name == "tandem search index"]  # its keeper's, its reads'
        victims = [pid for pid in sessions if pid != lock_backend and pid not in searching]
        assert len(victims) == 2, sessions  # the engine's store and the reader's
        head = store_head(url)
        for pid in victims + searching:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        until(lambda: not set(victims + searching) & set(server_sessions(admin, server)), 5, "the sessions to end")

        result = client.submit(message("pg-1", id="pg-1"))  # the write goes through
        assert result["results"][0]["accepted"]
        assert store_head(url) == int(result["position"]) == head + len(result["results"][0]["events"])
        events = client.events(0, limit=1_000)["events"]  # the reader's pool, renewed
        assert [event["position"] for event in events] == list(range(1, store_head(url) + 1))

        accepted, _ = recorded(url, "pg-")
        assert accepted == Counter({"pg-0": 1, "pg-1": 1})
        found = client.request("GET", "/v1/search?q=pg-1")  # the search's sessions, renewed
        assert found["position"] <= store_head(url) and found["indexed"]
        assert lock_backend in server_sessions(admin, server)  # the lock's session is untouched, and still holds it
        (holder,) = admin.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = %s", (lock_backend,)
        ).fetchone()  # type: ignore[misc]
        assert holder == lock_backend
        assert_serving(server, "pg-after")
    assert tandem("verify", "--store", url).returncode == 0


# --------------------------------------------------- 6. health during a batch


def test_health_answers_while_a_big_batch_is_decided(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with Served(tmp_path, url) as server:
        open_conversation(server)
        head = store_head(url)
        batch = [message(f"health-{number}") for number in range(batch_inputs)]  # ~2 MB: over 64 KiB
        answer: dict[str, object] = {}
        poster = threading.Thread(target=lambda: answer.update(server.client("human").submit_batch(batch)))
        asker = Client(server.url, "")  # health needs no token
        answers: list[tuple[float, int]] = []
        started = time.perf_counter()
        poster.start()
        while poster.is_alive():
            asked = time.perf_counter()
            position = int(asker.health()["position"])
            answers.append((time.perf_counter() - asked, position))
            time.sleep(0.005)
        poster.join()
        batch_s = time.perf_counter() - started
        final = int(answer["position"])  # type: ignore[call-overload]
    slowest = max(seconds for seconds, _ in answers)
    assert len(answers) >= 3, f"the batch took {batch_s:.2f} s: too short to ask"
    assert slowest < max(0.25, batch_s / 3), f"health took {slowest:.3f} s while a {batch_s:.2f} s batch was decided"
    # The committed head, never a position of the batch still being decided.
    assert {position for _, position in answers} <= {head, final}
    assert answers[0][1] == head
    print(f"\nhealth during a {batch_s:.2f} s batch: {len(answers)} answers, slowest {slowest * 1e3:.1f} ms")
