"""`tandem serve --stores FILE`: several stores served by one process.

Each store of the file is what `tandem serve --store URL --tokens FILE` makes
of it: its own writer lock, runtime, engine, views, log index, live stream,
console sessions and rounds (`adapters/serve.py`), each its own Litestar app.
In front of them one ASGI app routes every request to the store its
credential belongs to, so the API and the console keep docs/api.md's paths:

- a token in the URL: the store it belongs to, which refuses it (401) as a
  single server does, whatever else the request carries;
- `Authorization: Bearer TOKEN`: the store whose tokens file holds TOKEN (a
  token may be in one store's file only: the start is refused otherwise);
- the console's session cookie: the store that opened the session;
- `POST /login` (the console's sign-in form): the store of the token typed;
- `GET` or `HEAD /v1/health` with neither: every store's health in one
  answer (an extension: `{"status": "ok", "stores": {NAME: {...}}}`, 503
  `store_unavailable` naming the stores that cannot be read);
- anything else (the sign-in page, the API document, a request with a token
  no store knows): the first store, which answers it as a single server does
  (a 401 for an unknown token).

Not in this mode: --follow, --standby and --github-secret-file (one process
per store for those), and --store, --tokens, --spool, --health, --watchdog-db
on the command line (each store's are in the file). Every store shares one
interpreter: their inputs together are bounded by one core, where a process
per store gets one each (docs/operations.md).

The file (JSON, at most `stores_max` stores):

    {"stores": [{"name": "alpha", "store": "URL", "tokens": "FILE",
                 "spool": "FOLDER", "health": "FILE", "watchdog_db": "FILE"}]}

`spool`, `health` and `watchdog_db` are optional; relative paths are read
from the file's folder. It is refused (exit 2) unless owned by the server's
user and writable by it alone (it chooses the tokens files that apply), or
with a key repeated in an object.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import msgspec

from tandem.adapters.api_schema import error_body
from tandem.adapters.console import SECURITY_HEADERS
from tandem.adapters.console.signin import form_bytes_max
from tandem.adapters.http_inputs import query_holds_token
from tandem.adapters.service import Service
from tandem.adapters.sessions import session_cookie
from tandem.adapters.tokens import decode_private_json, read_private_file

stores_max = 64
stores_file_bytes_max = 1 << 20
store_name_pattern = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Command-line options that name one store's things: in this mode they are each store's, in the file.
_ONE_STORE_OPTIONS = ("follow", "standby", "github_secret_file", "spool", "health", "watchdog_db")


class StoresRefused(Exception):
    """The stores file cannot be used (the message names it and what is wrong)."""


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    store: str
    tokens: str
    spool: str | None = None
    health: str | None = None
    watchdog_db: str | None = None


class _File(msgspec.Struct, forbid_unknown_fields=True):
    stores: list[_Entry]


@dataclass(frozen=True)
class StoreEntry:
    name: str
    store: str
    tokens: Path
    spool: Path | None
    health: Path | None
    watchdog_db: Path | None


def load_stores(path: Path) -> list[StoreEntry]:
    """Read and check the stores file: its owner and mode (as the tokens
    file's, but readable by others), no key repeated, names, counts, no
    store twice."""
    where = f"stores file {path}"
    # It says which tokens files apply: owned and written by the server's user alone (readable: no token in it).
    data = read_private_file(path, where, stores_file_bytes_max, StoresRefused, readable_by_others=True)
    parsed = decode_private_json(
        data, where, _File, '{"stores": [{"name": "alpha", "store": "URL", "tokens": "FILE"}]}', StoresRefused
    )
    if not 1 <= len(parsed.stores) <= stores_max:
        raise StoresRefused(f"stores file {path}: {len(parsed.stores)} stores; name 1 to {stores_max}")
    folder = path.parent
    entries: list[StoreEntry] = []
    for index, entry in enumerate(parsed.stores):
        where = f"stores file {path}: $.stores[{index}]"
        if not store_name_pattern.fullmatch(entry.name):
            raise StoresRefused(f"{where}.name {entry.name!r}: lower-case letters, digits, '-' and '_', at most 64")
        if any(known.name == entry.name for known in entries):
            raise StoresRefused(f"{where}.name: {entry.name!r} names two stores")
        if any(known.store == entry.store for known in entries):
            raise StoresRefused(f"{where}.store: the same store as {next(k.name for k in entries if k.store == entry.store)!r}")
        entries.append(StoreEntry(
            entry.name, entry.store, folder / entry.tokens, *(None if value is None else folder / value for value in (entry.spool, entry.health, entry.watchdog_db)),
        ))  # fmt: skip
    return entries


def check_options(args: argparse.Namespace) -> None:
    """The command line's one-store options are refused with --stores (EXIT_USAGE)."""
    given = [name for name in _ONE_STORE_OPTIONS if getattr(args, name, None) not in (None, False)]
    given += [name for name in ("store", "tokens") if getattr(args, name, None) is not None]
    if given:
        shown = ", ".join("--" + name.replace("_", "-") for name in given)
        raise StoresRefused(f"--stores names each store's own options in its file: {shown} cannot go with it")


def store_args(args: argparse.Namespace, entry: StoreEntry) -> argparse.Namespace:
    """The command line as `tandem serve --store ... --tokens ...` of this store would have it."""
    return argparse.Namespace(**{
        **vars(args), "store": entry.store, "tokens": entry.tokens, "spool": entry.spool, "health": entry.health,
        "watchdog_db": entry.watchdog_db, "follow": False, "standby": False, "github_secret_file": None,
    })  # fmt: skip


def shared_tokens(tables: list[tuple[str, Any]]) -> tuple[str, str] | None:
    """Two stores whose tokens files hold the same token (its digest), if any."""
    seen: dict[bytes, str] = {}
    for name, table in tables:
        for digest, _ in table.entries:
            if digest in seen and seen[digest] != name:
                return seen[digest], name
            seen[digest] = name
    return None


# ------------------------------------------------------------------ the front


@dataclass
class Member:
    name: str
    service: Service
    app: Any  # the store's ASGI app (its InputsFastPath in front of its Litestar app)


@dataclass
class StoresFront:
    """ASGI: each request to its store's app; the lifespan to every app."""

    members: list[Member]
    lifespan_tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.members[0].app(scope, receive, send)
            return
        headers = {name: value for name, value in scope["headers"] if name in (b"authorization", b"cookie")}
        # A token in the URL is refused whatever else the request carries: by its own store.
        member = self._by_query(scope.get("query_string", b""))
        member = member or self._by_token(headers.get(b"authorization")) or await self._by_session(headers.get(b"cookie"))
        if member is None and scope["path"] == "/login" and scope["method"] == "POST":
            member, receive = await self._by_sign_in(receive)
        if member is None and scope["path"] == "/v1/health" and scope["method"] in ("GET", "HEAD"):
            await self._health(scope["method"], send)
            return
        await (member or self.members[0]).app(scope, receive, send)

    # -- who the request is for

    def _by_token(self, authorization: bytes | None) -> Member | None:
        if authorization is None:
            return None
        scheme, _, token = authorization.decode("latin-1").partition(" ")
        return self._holding(token.strip()) if scheme.lower() == "bearer" else None

    def _holding(self, token: str) -> Member | None:
        found = None
        for member in self.members:  # every store asked: no early answer to time
            if member.service.tokens.actor_of(token) is not None:
                found = member
        return found

    def _by_query(self, query_string: bytes) -> Member | None:
        if not query_string:
            return None
        return next((m for m in self.members if query_holds_token(m.service.tokens, query_string)), None)

    async def _by_session(self, cookie: bytes | None) -> Member | None:
        if cookie is None:
            return None
        try:
            jar = SimpleCookie(cookie.decode("latin-1"))
        except CookieError:
            return None
        morsel = jar.get(session_cookie)
        if morsel is None:
            return None
        for member in self.members:
            if await member.service.sessions.find(morsel.value) is not None:
                return member
        return None

    async def _by_sign_in(self, receive: Any) -> tuple[Member | None, Any]:
        """The store of the token typed in the sign-in form; the form's bytes
        handed on to that store's app as they came."""
        messages: list[dict[str, Any]] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if len(body) > form_bytes_max or not message.get("more_body", False):
                break
        typed = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0] if len(body) <= form_bytes_max else ""

        async def replay() -> dict[str, Any]:
            return messages.pop(0) if messages else await receive()

        return (self._holding(typed.strip()) if typed.strip() else None), replay

    async def _health(self, method: str, send: Any) -> None:
        stores: dict[str, dict[str, Any]] = {}
        for member in self.members:
            engine = member.service.runtime.engine
            readable = engine is not None and not engine.stale
            stores[member.name] = {
                "status": "ok" if readable else "store_unavailable",
                "position": engine.committed if engine is not None else 0,
                "writer": True,
            }
            degraded = member.service.runtime.side_files.degraded()
            if degraded:
                stores[member.name]["degraded"] = degraded
        down = [name for name, health in stores.items() if health["status"] != "ok"]
        if down:
            status = 503
            body = error_body("store_unavailable", f"store(s) {', '.join(down)} cannot be read now")[:-1] + b',"stores":' + msgspec.json.encode(stores) + b"}"
        else:
            status, body = 200, msgspec.json.encode({"status": "ok", "stores": stores})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})

    # -- lifespan

    async def _lifespan(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Start every store's app (in the file's order), and stop them all."""
        channels = []
        message = await receive()
        assert message["type"] == "lifespan.startup", message
        for member in self.members:
            inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            own = {**scope, "state": {}}
            self.lifespan_tasks.append(asyncio.create_task(member.app(own, inbox.get, outbox.put)))
            await inbox.put({"type": "lifespan.startup"})
            reply = await outbox.get()
            channels.append((inbox, outbox))
            if reply["type"] != "lifespan.startup.complete":
                await self._shutdown(channels[:-1])
                await send({"type": "lifespan.startup.failed", "message": f"store {member.name}: {reply.get('message', '')}"})
                return
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        assert message["type"] == "lifespan.shutdown", message
        failed = await self._shutdown(channels)
        await send({"type": "lifespan.shutdown.failed", "message": failed} if failed else {"type": "lifespan.shutdown.complete"})

    async def _shutdown(self, channels: list[tuple[Any, Any]]) -> str:
        failures = []
        for (inbox, outbox), member in zip(channels, self.members):
            await inbox.put({"type": "lifespan.shutdown"})
            reply = await outbox.get()
            if reply["type"] != "lifespan.shutdown.complete":
                failures.append(f"store {member.name}: {reply.get('message', '')}")
        return "; ".join(failures)

