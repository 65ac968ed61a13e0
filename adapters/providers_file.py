"""The provider snapshot the watchdog reads (contract v1.2 section 4.3):
which provider accounts are logged in, and the credential's expiry when the
provider exposes it ("Use known credential expiry only when exposed").

Whatever knows a provider's login (a runner's login check, a cron job, the
login command itself) replaces this JSON file atomically
(`health_file.write_atomically`); the watchdog reads it every round, with no
need of the daemon, and judges each provider by its own clock:

    {"format": "tandem-providers/1",
     "providers": [{"provider": "anthropic", "ready": true, "auth_expires_at": "2026-12-01T18:00:00Z"},
                   {"provider": "openai", "ready": false, "reason": "not_logged_in"}]}
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path

from tandem.adapters.health_file import parse_time

providers_format = "tandem-providers/1"
providers_bytes_max = 262_144
providers_max = 64
reason_chars_max = 64


class ProvidersUnreadable(Exception):
    """The file exists but is not a provider snapshot we understand."""


@dataclass(frozen=True, slots=True)
class Readiness:
    """One provider, as the watchdog judges it at `now`."""

    provider: str
    ready: bool
    reason: str | None
    auth_expires_at: datetime.datetime | None


def _entry(item: object) -> tuple[str, bool, str | None, datetime.datetime | None]:
    if not isinstance(item, dict) or not isinstance(item.get("provider"), str) or not isinstance(item.get("ready"), bool):
        raise ValueError("each provider needs a string `provider` and a boolean `ready`")
    reason = item.get("reason")
    if reason is not None and (not isinstance(reason, str) or not reason or len(reason) > reason_chars_max):
        raise ValueError(f"bad reason for {item['provider']!r}")
    expires = item.get("auth_expires_at")
    return item["provider"], item["ready"], reason, parse_time(expires) if expires is not None else None


def read_providers(path: Path, now: datetime.datetime) -> list[Readiness]:
    """The providers in `path` (none when there is no file), judged at `now`:
    not ready as reported, or once its known expiry has passed (`auth_expired`)."""
    try:
        with open(path, "rb") as file:
            data = file.read(providers_bytes_max + 1)
    except FileNotFoundError:
        return []
    except OSError as error:
        raise ProvidersUnreadable(f"cannot read {path}: {error.strerror}") from error
    if len(data) > providers_bytes_max:
        raise ProvidersUnreadable(f"{path} is over {providers_bytes_max} bytes")
    try:
        body = json.loads(data)
        if not isinstance(body, dict) or body.get("format") != providers_format:
            raise ValueError(f"not a {providers_format} file")
        items = body.get("providers")
        if not isinstance(items, list) or len(items) > providers_max:
            raise ValueError(f"`providers` must be a list of at most {providers_max}")
        entries = [_entry(item) for item in items]
    except (ValueError, TypeError) as error:
        raise ProvidersUnreadable(f"{path}: {error}") from error
    judged: list[Readiness] = []
    for provider, ready, reason, expires in entries:
        if ready and expires is not None and expires <= now:
            ready, reason = False, "auth_expired"  # a known expiry passed: no need to ask anyone
        judged.append(Readiness(provider, ready, None if ready else reason or "not_ready", expires))
    return judged
