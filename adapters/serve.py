"""`tandem serve`: the runtime (adapters/runtime.py) with the HTTP API in
front (adapters/http_api.py), on uvicorn.

Start: load the tokens (a file readable by others, or a short token, is
refused) and, with --github-secret-file, the webhook's secret (a file
readable by others, or an empty secret, is refused), bind the socket (a
busy port refused before the store is touched), take the store's writer
lock, take the spool's lock, fold the store, apply the waiting spool files
and the watchdog's rows, record `daemon.start`, and once serving print
`listening on http://HOST:PORT` as the first line on stdout. A start
refused after the lock removes a store it made and wrote no event to
(`Runtime.close(refused=True)`). Then, besides requests, the runtime's rounds run
every `--interval` (spool, watchdog, idle tick, health snapshot).

With --follow (or --standby while another process holds the writer lock)
it starts as a follower instead (adapters/follow.py): no lock, the store
folded read-only and tailed, every write 409 `read_only`; a standby becomes
the writer when it gets the lock.

Stop (SIGTERM or SIGINT): stop accepting, end every stream, finish the
requests in flight (the input in flight is committed or not, whole), record
`daemon.stop` (expected), write a snapshot if due, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

import uvicorn

from tandem.adapters import daemon, serve_many
from tandem.adapters.commands.common import EXIT_USAGE
from tandem.adapters.github_webhook import SecretRefused, load_github_secret
from tandem.adapters.follow import FOLLOWER, STANDBY, Follower, follow
from tandem.adapters.http_api import build_app
from tandem.adapters.service import ApiError, Service, to_thread_to_the_end
from tandem.adapters.sessions import Sessions
from tandem.adapters.http_inputs import InputsFastPath
from tandem.adapters.process import ProcessError, log
from tandem.adapters.search import start_searching
from tandem.adapters.runtime import LockLost, Runtime
from tandem.adapters.slow_clients import deadlined_protocol
from tandem.adapters.store import open_store, parse_store_url, redacted
from tandem.adapters.stream import Hub, resume_messages_max, start_rows_commits_max
from tandem.adapters.terminal import printable_lines
from tandem.adapters.writer_lock import WriterLocked
from tandem.replay.port import StoreError
from tandem.adapters.tokens import TokensRefused, TokenTable, load_tokens
from tandem.replay.commits import refoldable, tail_commits, with_changed_views

shutdown_grace_s = 30  # requests still running this long after a stop are cancelled
listen_backlog = 256


class ServeError(ProcessError):
    """`tandem serve` cannot start (its tokens, store, spool or socket) or lost its writer lock."""


# ----------------------------------------------------------------- server


class _Server(uvicorn.Server):
    """uvicorn, saying where it listens once it does, and ending the live
    streams as soon as a stop is asked (uvicorn waits for open responses)."""

    def __init__(self, config: uvicorn.Config, services: list[Service], address: str, announce: Callable[[str], None] | None) -> None:
        super().__init__(config)
        self.services = services  # one, or each store's (--stores)
        self.address = address
        self.announce = announce
        for service in services:
            service.stop_server = self.stop_soon
            service.connection_aborter = self.connection_aborter
            service.requests_under_way = lambda: len(self.server_state.tasks)  # uvicorn's task per request read

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(f"listening on {self.address}", flush=True)
            if self.announce is not None:
                self.announce(self.address)

    def handle_exit(self, sig: int, frame: Any) -> None:
        for service in self.services:
            service.runtime.stopping = True  # a long spool file stops between two batches
            hub = service.hub
            if hub is not None:
                hub.loop.call_soon_threadsafe(hub.close)
        super().handle_exit(sig, frame)

    def stop_soon(self) -> None:
        """Stop as a signal does, from the event loop's thread (the streams
        end first: uvicorn would wait for them)."""
        for service in self.services:
            service.runtime.stopping = True
            if service.hub is not None:
                service.hub.close()
        self.should_exit = True

    def connection_aborter(self, scope: dict[str, Any]) -> Callable[[], None] | None:
        """The abort of the connection serving the request `scope` (uvicorn's
        protocol objects: each has its transport and its current cycle)."""
        for connection in self.server_state.connections:
            cycle = getattr(connection, "cycle", None)
            transport = getattr(connection, "transport", None)
            if cycle is not None and getattr(cycle, "scope", None) is scope and transport is not None:
                return transport.abort
        return None


def bind_listening(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket listening on HOST:PORT and its URL; ServeError if it cannot be
    (a busy port): taken first, so that a refused start has touched nothing."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a host name
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(listen_backlog)
    sock.set_inheritable(True)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if family == socket.AF_INET6 else bound_host
    return sock, f"http://{shown}:{bound_port}"


def _lifespan(service: Service, args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    runtime = service.runtime
    tasks: list[asyncio.Task[None]] = []

    async def started() -> None:
        engine = runtime.engine
        assert engine is not None and engine.store is not None
        head = engine.state.position
        kept = refoldable(engine.store, tail_commits(engine.store, head, resume_messages_max))
        history = with_changed_views(engine.store, kept, rows_from=max(0, len(kept) - start_rows_commits_max))
        service.hub = Hub(asyncio.get_running_loop(), history, head, args.stream_clients_max, args.stream_keepalive)
        engine.listeners.append(service.on_commit)
        engine.rows_wanted = service.hub.wants_rows  # row changes rendered only while a stream may want them
        engine.listeners.append(service.indexing.on_commit)  # before the build reads the head
        service.indexing.start(service.reader)
        follower = service.follower
        service.searching = start_searching(
            runtime.settings.store_url, service.reader, lambda: follower is None or follower.writing, follower=bool(getattr(args, "follow", False)),
        )  # fmt: skip
        if service.searching.keeper is not None:
            engine.listeners.append(service.searching.keeper.poke)
        if follower is None or follower.writing:
            tasks.append(asyncio.create_task(_rounds(service)))
            return

        async def hold(work: Callable[[], Any]) -> Any:
            async with service.engine_lock:
                return await to_thread_to_the_end(work)

        def fatal(reason: str) -> None:
            log(f"{reason}; stopping")
            service.lock_lost = reason
            if service.stop_server is not None:
                service.stop_server()

        tasks.append(asyncio.create_task(follow(follower, hold, lambda: _rounds(service), fatal)))

    async def stopping() -> None:
        for task in tasks:
            task.cancel()
        # Their work on the engine ends first (a round committing a spool
        # batch, a takeover): the stop never runs beside it.
        await asyncio.gather(*tasks, return_exceptions=True)
        if service.searching is not None:
            await to_thread_to_the_end(service.searching.close)  # after the transaction in hand
        follower = service.follower
        if follower is not None and not follower.writing:
            follower.close()  # a follower records nothing and writes no snapshot
            log(f"stopped as asked ({follower.role}, nothing recorded)")
            return
        lost = service.lock_lost is not None
        async with service.engine_lock:
            await to_thread_to_the_end(lambda: runtime.stop(not lost))  # without the lock it records nothing
        store = f", store {redacted(runtime.settings.store_url)}"  # which one, when a process serves several
        if lost:
            log(f"stopped: the writer lock was lost, nothing more recorded{store}")
        else:
            log(("stopped as asked (daemon.stop expected)" if runtime.started else "stopped as asked") + store)

    return [started], [stopping]


async def _rounds(service: Service) -> None:
    """The runtime's duties beside HTTP; a failing round is logged, never fatal."""
    runtime = service.runtime
    while True:
        await asyncio.sleep(runtime.settings.interval_s)
        try:
            await service.with_engine(runtime.round, inline=False)
        except LockLost as lost:
            log(f"{lost}; stopping")
            service.lock_lost = str(lost)
            if service.stop_server is not None:
                service.stop_server()
            return
        except ApiError as error:
            if service.lock_lost is not None:  # another writer holds the store now: the server is stopping
                log(f"{service.lock_lost}; stopping")
                return
            log(f"round skipped: {error.message}")
        except Exception:  # a live runtime is never stopped by what it was sent
            log("round failed:\n" + printable_lines(traceback.format_exc()))  # it may quote an input


def _ignore(number: int, frame: Any) -> None:
    """uvicorn raises the signal it handled again once it has stopped."""


def run(
    args: argparse.Namespace, announce: Callable[[str], None] | None = None, bound: tuple[socket.socket, str] | None = None
) -> None:
    """Serve until a stop. `bound`: the listening socket and its URL, when the
    caller bound it (`tandem demo --serve`, before it writes anything)."""
    if getattr(args, "stores", None) is not None:
        _run_many(args, announce)
        return
    try:
        tokens = load_tokens(args.tokens)
        secret_file = getattr(args, "github_secret_file", None)
        github_secret = load_github_secret(secret_file) if secret_file is not None else None
    except (TokensRefused, SecretRefused) as error:
        raise ServeError(str(error)) from None
    settings = daemon.settings_from(args, runtime_inputs=not args.no_runtime_inputs)
    _check_role(args, settings)
    sock, address = bound if bound is not None else bind_listening(*args.listen)  # a busy port: before the store
    runtime = Runtime(settings)
    undo: list[Callable[[], None]] = [sock.close]  # releases what _open took, if the start fails
    try:
        follower, reader, spool_lock = _open(args, runtime, undo)
    except (ProcessError, StoreError) as error:
        for release in reversed(undo):
            release()
        runtime.close(refused=True)
        raise ServeError(str(error), getattr(error, "code", 1)) from None
    service = Service(
        runtime=runtime, reader=reader, tokens=tokens, commits_inline=parse_store_url(settings.store_url).kind != "postgresql",
        github_secret=github_secret, follower=follower, sessions=_sessions(reader, tokens),
    )  # fmt: skip
    app = _app(service, args)
    closing = [reader.close] if reader is not runtime.engine.store else []
    closing += [follower.close] if follower is not None else []
    closing += [runtime.close] + ([spool_lock.release] if spool_lock is not None else [])
    _serve(app, args, [service], sock, address, announce, closing)


def _serve(
    app: Any, args: argparse.Namespace, services: list[Service], sock: socket.socket, address: str,
    announce: Callable[[str], None] | None, closing: list[Callable[[], None]],
) -> None:  # fmt: skip
    """uvicorn on the bound socket until a stop; then `closing`, in order.
    Its HTTP protocol gives a request's head and body each a deadline
    (adapters/slow_clients.py)."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=shutdown_grace_s,
        log_config=None, server_header=False, http=deadlined_protocol(args.head_timeout, args.body_timeout),
    )  # fmt: skip
    logging.basicConfig(level=logging.WARNING, format="tandem: %(name)s: %(message)s", stream=sys.stderr)
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, _ignore)
    server = _Server(config, services, address, announce)
    try:
        server.run(sockets=[sock])
        lost = next((service.lock_lost for service in services if service.lock_lost is not None), None)
        if lost is not None:
            raise ServeError(lost)
    finally:
        sock.close()
        for close in closing:
            close()


def _run_many(args: argparse.Namespace, announce: Callable[[str], None] | None) -> None:
    """`--stores FILE`: each store opened as `tandem serve` opens one, then
    all served on one socket (adapters/serve_many.py)."""
    try:
        serve_many.check_options(args)
        entries = serve_many.load_stores(args.stores)
    except serve_many.StoresRefused as error:
        raise ServeError(str(error), EXIT_USAGE) from None
    try:
        tables = [(entry.name, load_tokens(entry.tokens)) for entry in entries]
    except TokensRefused as error:
        raise ServeError(str(error)) from None
    shared = serve_many.shared_tokens(tables)
    if shared is not None:
        raise ServeError(f"stores {shared[0]!r} and {shared[1]!r} share a token: a token belongs to one store", EXIT_USAGE)
    sock, address = bind_listening(*args.listen)  # a busy port: before any store
    members: list[serve_many.Member] = []
    closing: list[Callable[[], None]] = [sock.close]
    try:
        for entry, (_, tokens) in zip(entries, tables):
            members.append(_member(args, entry, tokens, closing))
    except (ProcessError, StoreError) as error:
        for close in reversed(closing):
            close()
        raise ServeError(str(error), getattr(error, "code", 1)) from None
    services = [member.service for member in members]
    _serve(serve_many.StoresFront(members), args, services, sock, address, announce, list(reversed(closing)))


def _member(args: argparse.Namespace, entry: Any, tokens: Any, closing: list[Callable[[], None]]) -> serve_many.Member:
    """One store of --stores, opened as its writer; what to close is added to `closing`."""
    own = serve_many.store_args(args, entry)
    try:
        settings = daemon.settings_from(own, runtime_inputs=not args.no_runtime_inputs)
        runtime = Runtime(settings)
        undo: list[Callable[[], None]] = []
        try:
            _, reader, spool_lock = _open(own, runtime, undo)
        except BaseException:
            for release in reversed(undo):
                release()
            runtime.close(refused=True)
            raise
    except (ProcessError, StoreError) as error:
        raise ServeError(f"store {entry.name}: {error}", getattr(error, "code", 1)) from None
    closing.append(runtime.close)
    if spool_lock is not None:
        closing.append(spool_lock.release)
    if reader is not runtime.engine.store:
        closing.append(reader.close)
    service = Service(
        runtime=runtime, reader=reader, tokens=tokens, commits_inline=parse_store_url(settings.store_url).kind != "postgresql",
        sessions=_sessions(reader, tokens),
    )  # fmt: skip
    return serve_many.Member(entry.name, service, _app(service, own))


def _sessions(reader: Any, tokens: TokenTable) -> Sessions:
    """The console's sessions: in the store's database when this server
    writes an SQL store (a writer's reader store is opened for writing), so
    they outlive a restart, each only while its token is in the tokens
    file; else in memory (adapters/sessions.py)."""
    table = getattr(reader, "session_table", None)
    return Sessions(table() if table is not None else None, tokens=tokens)


def _app(service: Service, args: argparse.Namespace) -> Any:
    """One store's ASGI app: POST /v1/inputs's fast path in front of the Litestar app, with its lifespan."""
    on_startup, on_shutdown = _lifespan(service, args)
    return InputsFastPath(build_app(service, on_startup, on_shutdown), service)


def _open(args: argparse.Namespace, runtime: Runtime, undo: list[Callable[[], None]]) -> tuple[Follower | None, Any, Any]:
    """As a follower (or standby): the store folded read-only. As the writer:
    the writer lock, the spool's lock, the store folded, the start recorded.
    The follower, the reader store and the spool's lock."""
    settings = runtime.settings
    if _follows(args, runtime):
        follower = Follower(runtime, FOLLOWER if args.follow else STANDBY)
        undo.append(follower.close)
        follower.open()
        return follower, open_store(settings.store_url, read_only=True), None
    runtime.lock_store()
    spool_lock = daemon.spool_lock(settings)
    if spool_lock is not None:
        undo.append(spool_lock.release)
    runtime.open()
    runtime.start()
    assert runtime.engine is not None and runtime.engine.store is not None
    memory = parse_store_url(settings.store_url).kind == "memory"
    return None, runtime.engine.store if memory else open_store(settings.store_url), spool_lock


def _check_role(args: argparse.Namespace, settings: Any) -> None:
    """--follow applies nothing; neither role works on a memory store."""
    following = getattr(args, "follow", False)
    if not following and not getattr(args, "standby", False):
        return
    flag = "--follow" if following else "--standby"
    if parse_store_url(settings.store_url).kind == "memory":
        raise ServeError(f"{flag}: a memory store is private to its process: nothing to follow", EXIT_USAGE)
    if following and (settings.spool or settings.watchdog_db or settings.health):
        raise ServeError("--follow applies and publishes nothing: --spool, --watchdog-db and --health are a writer's (or a --standby's)", EXIT_USAGE)


def _follows(args: argparse.Namespace, runtime: Runtime) -> bool:
    """Whether this server starts as a follower: --follow, or --standby while
    another process holds the writer lock (free, a standby writes at once)."""
    if getattr(args, "follow", False):
        return True
    if not getattr(args, "standby", False):
        return False
    try:
        runtime.lock_store()
    except ProcessError as error:
        if not isinstance(error.__cause__, WriterLocked):
            raise
        log(f"standby: {error}; following the store until that lock is free")
        return True
    log("standby: the writer lock was free: writing")
    return False
