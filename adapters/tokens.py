"""Bearer tokens: who sends an input is proved by a credential (docs/api.md).

The tokens file maps each token to the actor it speaks for:

    {"tokens": [{"actor": "human", "token": "…"}, {"actor": "background", "token": "…"}]}

A file owned by another user than the server's, readable by group or others,
with a key repeated in an object (JSON readers disagree on which value wins:
the file's writer could mean one actor and the server read another), a token
shorter than `token_chars_min`, an unknown actor or one token given twice is
refused with a message naming the file and the problem. A presented token is
compared with every known one in constant time (`hmac.compare_digest` over
SHA-256 digests, all of them, whatever matches), so the time a refusal takes
says nothing about how close a guess was. Tokens are never logged: `TokenTable` keeps digests only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, get_args

import msgspec

from tandem.domain.inputs import Actor
from tandem.domain.nesting import repeated_key_error

token_chars_min = 32
tokens_file_bytes_max = 1_048_576
tokens_max = 1_000
ACTORS: tuple[str, ...] = get_args(Actor)
_Schema = TypeVar("_Schema")
# What each private file may allow others (the mode bits refused), and how to mend it.
_SECRET = (stat.S_IRWXG | stat.S_IRWXO, "readable or writable by group or others", "chmod 600")
_NOT_WRITABLE = (stat.S_IWGRP | stat.S_IWOTH, "writable by group or others", "chmod go-w")


class TokensRefused(Exception):
    """The tokens file cannot be used; the message names the file and why."""


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    actor: str
    token: str


class _File(msgspec.Struct, forbid_unknown_fields=True):
    tokens: list[_Entry]


@dataclass(frozen=True, slots=True)
class TokenTable:
    """(SHA-256 of a token, its actor) for every token of the file."""

    entries: tuple[tuple[bytes, str], ...]
    source: str = ""

    def actor_of(self, presented: str) -> str | None:
        """The actor `presented` speaks for, or None. Every entry is compared
        (no early exit), each comparison in constant time."""
        digest = _digest(presented)
        found: str | None = None
        for known, actor in self.entries:
            if hmac.compare_digest(known, digest):
                found = actor
        return found

    def actors(self) -> list[str]:
        return sorted({actor for _, actor in self.entries})

    def holds(self, actor: str, check: Callable[[bytes], bool]) -> bool:
        """Whether a token of `actor` passes `check` (given its digest): every
        entry is checked, no early exit."""
        found = False
        for known, holder in self.entries:
            if holder == actor and check(known):
                found = True
        return found


def token_digest(token: str) -> bytes:
    """The SHA-256 of a token: what the table keeps of it."""
    return _digest(token)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def read_private_file(
    path: Path, where: str, bytes_max: int, refused: type[Exception], readable_by_others: bool = False
) -> bytes:  # fmt: skip
    """The bytes of a file that says whom to trust (the tokens, a webhook's
    secret, the stores of --stores): a regular file owned by the server's
    user (another user could rewrite it), written by it alone and, unless
    `readable_by_others` (a file holding no secret), read by it alone; at
    most `bytes_max` bytes; else `refused`, its message naming `where` and why."""
    try:
        status = path.stat()
    except OSError as error:
        raise refused(f"{where}: cannot read it: {error.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise refused(f"{where}: not a regular file")
    if status.st_uid != os.geteuid():
        raise refused(f"{where}: owned by uid {status.st_uid}, not this server's user ({os.geteuid()})")
    bits, said, mend = _NOT_WRITABLE if readable_by_others else _SECRET
    if status.st_mode & bits:
        raise refused(f"{where}: {said} (mode {stat.S_IMODE(status.st_mode):04o}); run: {mend} {path}")
    if status.st_size > bytes_max:
        raise refused(f"{where}: {status.st_size} bytes, over the {bytes_max}-byte limit")
    try:
        return path.read_bytes()
    except OSError as error:
        raise refused(f"{where}: cannot read it: {error.strerror}") from None


def decode_private_json(data: bytes, where: str, schema: type[_Schema], example: str, refused: type[Exception]) -> _Schema:
    """A private file's JSON as `schema`, with no key repeated in any object
    (its writer's tool and Tandem could read different values: a parser
    differential); else `refused`, naming `where`, the problem and its path."""
    try:
        parsed: Any = msgspec.json.decode(data, type=schema)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise refused(f"{where}: {error} (expected {example})") from None
    repeated = repeated_key_error(data)  # the schema bounds the nesting: the walk is shallow
    if repeated is not None:
        raise refused(f"{where}: {repeated}")
    return parsed


def load_tokens(path: Path) -> TokenTable:
    """Read and check the tokens file (see the module's docstring)."""
    where = f"tokens file {path}"
    data = read_private_file(path, where, tokens_file_bytes_max, TokensRefused)
    parsed = decode_private_json(data, where, _File, '{"tokens": [{"actor": "human", "token": "..."}]}', TokensRefused)
    return TokenTable(tuple(_checked(path, parsed.tokens)), str(path))


def _checked(path: Path, entries: list[_Entry]) -> list[tuple[bytes, str]]:
    if not entries:
        raise TokensRefused(f"tokens file {path}: no tokens")
    if len(entries) > tokens_max:
        raise TokensRefused(f"tokens file {path}: {len(entries)} tokens, over the limit of {tokens_max}")
    table: list[tuple[bytes, str]] = []
    seen: set[bytes] = set()
    for number, entry in enumerate(entries, start=1):
        where = f"tokens file {path}: token {number} (actor {entry.actor!r})"
        if entry.actor not in ACTORS:
            raise TokensRefused(f"{where}: unknown actor; actors: {', '.join(ACTORS)}")
        if len(entry.token) < token_chars_min:
            raise TokensRefused(f"{where}: {len(entry.token)} characters, shorter than {token_chars_min}")
        if any(character.isspace() or not character.isprintable() for character in entry.token):
            raise TokensRefused(f"{where}: holds whitespace or control characters")
        digest = _digest(entry.token)
        if digest in seen:
            raise TokensRefused(f"{where}: the same token is given twice")
        seen.add(digest)
        table.append((digest, entry.actor))
    return table


def new_token() -> str:
    """A fresh random token (43 URL-safe characters, 256 bits)."""
    return secrets.token_urlsafe(32)


def write_tokens_file(path: Path, tokens: dict[str, str], exclusive: bool = False) -> os.stat_result:
    """Write a tokens file readable by its owner only (created 0600, never
    world-readable even for a moment); the file written. `exclusive`: only
    a new file (FileExistsError if `path` is there already)."""
    body = msgspec.json.format(
        msgspec.json.encode({"tokens": [{"actor": actor, "token": token} for actor, token in tokens.items()]}),
        indent=2,
    )
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, body + b"\n")
        return os.fstat(descriptor)
    finally:
        os.close(descriptor)
