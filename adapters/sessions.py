"""Console sessions: a person signs in once by pasting a token (docs/api.md,
"The console"); the session is what the browser holds from then on.

A session is a random id in an HttpOnly, SameSite=Strict cookie; the server
keeps, per session, the actor its token spoke for and a CSRF token that every
state-changing form must carry. The token itself is never kept, never put in
a page or a URL. A session ends after `session_idle_max_s` without a
request, `session_lifetime_max_s` after it began whatever its use, or at
sign-out; at most `sessions_max` are kept (the least recently seen goes).

Where they are kept (`Sessions(table)`):

* A server that writes an SQLite or PostgreSQL store keeps them in the
  store's own database too (`{table}_sessions`, adapters/store/sql.py), so a
  restart keeps everyone signed in. A row holds the SHA-256 of the session's
  id, never the id: who reads the database cannot sign in with what it
  reads. The row also binds the session to the token it was signed in with
  (a hash of the token's digest and the session's id, so it says nothing
  without the cookie): after a restart, a session whose token is no longer
  in the tokens file is refused and its row deleted. Sign-out deletes the row: the cookie is dead at once, replayed or
  not, before and after a restart. A row's `last_seen_at` is written at most
  once a minute (`touch_every_s`), so after a restart a session may end up to
  that much earlier than it would have; a row deleted by hand ends its
  session at that write, within a minute of its next use.
* Without a table (a `memory:` store; a follower or standby, which write
  nothing to the store) they live in the server's memory: a restart signs
  everyone out.

Either way this process holds the sessions it has seen in memory (at most
`sessions_max`), with each one's `flash`; the table is read when a cookie is
not among them (after a restart), and written on sign-in, sign-out, expiry
and the once-a-minute touch, each in a worker thread (a PostgreSQL round trip
never waits on the event loop). The clock is the wall clock: a session's
times must mean the same to the next process.

Before signing in, the login form carries a CSRF token too: the same random
value in a short-lived cookie and in the form (double submit), so no other
site can sign a browser in under its own token.

Kept beside the application service (adapters/service.py holds them), not in
the console's package, whose pages need Litestar: the service needs none.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.to_thread

from tandem.adapters.tokens import TokenTable, token_digest

session_cookie = "tandem_session"
login_cookie = "tandem_login"
session_idle_max_s = 12 * 3600
session_lifetime_max_s = 7 * 24 * 3600  # from sign-in, however busy the session
touch_every_s = 60  # a session's last use is written to its table at most this often
login_form_max_s = 600
sessions_max = 1_000
session_id_bytes = 32


@dataclass(frozen=True)
class SessionRow:
    """A session as its table holds it: times in whole wall-clock seconds."""

    key: str  # `session_key(id)`: the id's SHA-256, never the id
    actor: str
    csrf: str
    created: int
    last_seen: int
    expires: int
    token_check: str  # `token_check(id, the token's digest)`: which token it was signed in with


class SessionTable(Protocol):
    """Where sessions outlive the process (adapters/store/sql.py's `SqlSessionTable`).
    Each call may block (a database): `Sessions` makes them in a worker thread."""

    def insert(self, row: SessionRow, idle_since: int, keep_max: int) -> list[str]:
        """Add `row`; first remove the rows ended by then (expired, or last
        seen before `idle_since`) and, past `keep_max` rows, the least
        recently seen: the keys removed."""

    def get(self, key: str) -> SessionRow | None: ...

    def touch(self, key: str, last_seen: int) -> bool:
        """Write when the session was last used: whether its row is still there."""

    def delete(self, key: str) -> None: ...


@dataclass
class Session:
    actor: str
    csrf: str
    created: float  # wall-clock seconds
    last_seen: float
    expires: float
    stored_seen: float  # `last_seen` as the table has it
    flash: str | None = None  # what the last form did, shown once on the next page

    def live(self, now: float) -> bool:
        return now < self.expires and now - self.last_seen <= session_idle_max_s

    @classmethod
    def of_row(cls, row: SessionRow) -> Session:
        return cls(row.actor, row.csrf, row.created, row.last_seen, row.expires, row.last_seen)


def same(left: str | None, right: str | None) -> bool:
    """Constant-time equality of two secrets (None equals nothing)."""
    if left is None or right is None:
        return False
    return hmac.compare_digest(left.encode("utf-8", "surrogatepass"), right.encode("utf-8", "surrogatepass"))


def session_key(identifier: str) -> str:
    """What a session is kept under: its id's SHA-256 (hex)."""
    return hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()


def token_check(identifier: str, digest: bytes) -> str:
    """What a row keeps of the token its session was signed in with: bound
    to the session's id (never kept), so it tells nothing without the cookie."""
    return hashlib.sha256(b"tandem-session-token\0" + identifier.encode("utf-8", "surrogatepass") + b"\0" + digest).hexdigest()


async def _blocking(work: Callable[..., Any], *arguments: Any) -> Any:
    return await anyio.to_thread.run_sync(work, *arguments)


class Sessions:
    def __init__(self, table: SessionTable | None = None, clock: Callable[[], float] = time.time, tokens: TokenTable | None = None) -> None:
        """`tokens`: the tokens file's table, that a session read from `table`
        must still hold its token in (None: not checked)."""
        self.table = table
        self.clock = clock
        self.tokens = tokens
        self._by_key: OrderedDict[str, Session] = OrderedDict()  # least recently used first
        # Held while the table is read for a session this process does not
        # hold, and while one is ended: a sign-out never races a read that
        # would bring its session back.
        self._lock = asyncio.Lock()

    @property
    def kept_in(self) -> str:
        return "memory" if self.table is None else "table"

    async def open(self, actor: str, token: str) -> tuple[str, Session]:
        """A new session for `actor`, signed in with `token` (checked by the
        caller): (its id, for the cookie; the session)."""
        identifier = secrets.token_urlsafe(session_id_bytes)
        now = self.clock()
        session = Session(actor, secrets.token_urlsafe(session_id_bytes), now, now, now + session_lifetime_max_s, now)
        key = session_key(identifier)
        if self.table is not None:
            check = token_check(identifier, token_digest(token))
            row = SessionRow(key, actor, session.csrf, int(now), int(now), int(session.expires), check)
            async with self._lock:
                removed = await _blocking(self.table.insert, row, int(now - session_idle_max_s), sessions_max)
                for gone in removed:
                    self._by_key.pop(gone, None)
        self._remember(key, session)
        return identifier, session

    def _remember(self, key: str, session: Session) -> None:
        self._by_key[key] = session
        self._by_key.move_to_end(key)
        while len(self._by_key) > sessions_max:
            self._by_key.popitem(last=False)

    async def find(self, identifier: str | None) -> Session | None:
        """The live session with this id, touched; None if none (or ended)."""
        if not identifier:
            return None
        key = session_key(identifier)
        session = self._by_key.get(key)
        if session is None and self.table is not None:
            session = await self._load(identifier, key)
        if session is None:
            return None
        now = self.clock()
        if not session.live(now):
            await self._end(key)
            return None
        session.last_seen = now
        self._by_key.move_to_end(key)
        if self.table is not None and now - session.stored_seen >= touch_every_s:
            session.stored_seen = now
            if not await _blocking(self.table.touch, key, int(now)):  # its row deleted by hand
                await self._end(key)
                return None
        return session

    async def _load(self, identifier: str, key: str) -> Session | None:
        assert self.table is not None
        async with self._lock:
            held = self._by_key.get(key)  # read meanwhile, by another request
            if held is not None:
                return held
            row = await _blocking(self.table.get, key)
            if row is None:
                return None
            if not self._token_kept(identifier, row):
                await _blocking(self.table.delete, key)
                return None
            session = Session.of_row(row)
            self._remember(key, session)
            return session

    def _token_kept(self, identifier: str, row: SessionRow) -> bool:
        """Whether the token the row's session was signed in with is still one of the actor's."""
        if self.tokens is None:
            return True
        return self.tokens.holds(row.actor, lambda digest: hmac.compare_digest(token_check(identifier, digest), row.token_check))

    async def close(self, identifier: str | None) -> None:
        """End the session (sign-out): its cookie no longer signs anyone in."""
        if identifier:
            await self._end(session_key(identifier))

    async def _end(self, key: str) -> None:
        async with self._lock:
            self._by_key.pop(key, None)
            if self.table is not None:
                await _blocking(self.table.delete, key)

    def __len__(self) -> int:
        return len(self._by_key)
