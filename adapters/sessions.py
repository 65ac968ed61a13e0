"""Console sessions: a person signs in once by pasting a token (docs/api.md,
"The console"); the session is what the browser holds from then on.

A session is a random id in an HttpOnly, SameSite=Strict cookie; the server
keeps, per session, the actor its token spoke for and a CSRF token that every
state-changing form must carry. The token itself is never kept, never put in
a page or a URL. Sessions live in the server's memory: a restart signs
everyone out. Bounded: at most `sessions_max`, each ended after
`session_idle_max_s` without a request.

Before signing in, the login form carries a CSRF token too: the same random
value in a short-lived cookie and in the form (double submit), so no other
site can sign a browser in under its own token.

Kept beside the application service (adapters/service.py holds them), not in
the console's package, whose pages need Litestar: the service needs none.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

session_cookie = "tandem_session"
login_cookie = "tandem_login"
session_idle_max_s = 12 * 3600
login_form_max_s = 600
sessions_max = 1_000
session_id_bytes = 32


@dataclass
class Session:
    actor: str
    csrf: str
    last_seen: float  # monotonic seconds
    flash: str | None = None  # what the last form did, shown once on the next page


def same(left: str | None, right: str | None) -> bool:
    """Constant-time equality of two secrets (None equals nothing)."""
    if left is None or right is None:
        return False
    return hmac.compare_digest(left.encode("utf-8", "surrogatepass"), right.encode("utf-8", "surrogatepass"))


class Sessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_id: OrderedDict[str, Session] = OrderedDict()  # least recently used first

    def open(self, actor: str) -> tuple[str, Session]:
        """A new session for `actor`: (its id, for the cookie; the session)."""
        while len(self._by_id) >= sessions_max:
            self._by_id.popitem(last=False)
        identifier = secrets.token_urlsafe(session_id_bytes)
        session = Session(actor, secrets.token_urlsafe(session_id_bytes), self.clock())
        self._by_id[identifier] = session
        return identifier, session

    def find(self, identifier: str | None) -> Session | None:
        """The live session with this id, touched; None if none (or expired)."""
        if not identifier:
            return None
        session = self._by_id.get(identifier)
        if session is None:
            return None
        now = self.clock()
        if now - session.last_seen > session_idle_max_s:
            del self._by_id[identifier]
            return None
        session.last_seen = now
        self._by_id.move_to_end(identifier)
        return session

    def close(self, identifier: str | None) -> None:
        if identifier:
            self._by_id.pop(identifier, None)

    def __len__(self) -> int:
        return len(self._by_id)
