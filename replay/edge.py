"""The live edge: who may say what, and when, for inputs that arrive as they
happen (HTTP, the console, the spool), before anything is decided.

A recorded trace is taken as written. A live input is not: its sender is
proved by a credential (a token; for the spool, the actors `--spool-actors`
lets it speak for), what the runtime records about itself is the runtime's
alone, and its `at` is the server's to give or to check:

* `at` may be left out: it is stamped with the runtime's clock, never before
  the store's last input nor the previous line's (`LiveEdge.now`);
* a given `at` more than `at_ahead_max_s` ahead of that clock is refused
  (`at_in_future`): a writer must not move the engine's clock, and with it
  every deadline, into the future; one before the store's last input is
  refused (`at_before_head`), unless the input's `id` is recorded already:
  a retry is recorded as its duplicate at the store's last `at`
  (`LiveEdge.retried`);
* `daemon.start` and `daemon.stop`, and any input whose `id` is one the
  runtime gives the rows it imports from the watchdog's file (starting
  `watchdog/`), are refused (`reserved`): a spool file or a client that could
  write them could erase a crash or fence the real watchdog.

A refusal raises `EdgeRefused` (an HTTP status, a code of docs/api.md, a message
naming the line); the caller writes nothing.

The rules are plain data (`LiveEdge`: a clock reading, the store's last `at`,
the ids it holds, the sender's credential) handed down to the trace parser
(replay/traces.py), which applies them line by line: the parser calls only
down, into this module and the domain's decoder, never back into the
adapters that read the clock and the tokens.
"""

from __future__ import annotations

import datetime
from collections.abc import Container
from dataclasses import dataclass

import msgspec

from tandem.domain.inputs import Input, Unnamed, decode_input, format_at

at_ahead_max_s = 300
RESERVED_KINDS: tuple[str, ...] = ("daemon.start", "daemon.stop")
# The ids adapters/watchdog.py gives its rows (`watchdog/heartbeat/…`,
# `watchdog/incident/…`, `watchdog/recovered/…`), which the runtime imports.
reserved_id_prefix = "watchdog/"
# Who the spool speaks for unless told otherwise: not the human (a file is no
# proof of a person) and not the watchdog (its facts come from its own file).
SPOOL_ACTORS_DEFAULT: tuple[str, ...] = ("foreground", "background", "daemon", "executor", "source")

# What msgspec says when a line lacks `at` (the one field a live input may omit).
_missing_at = "Object missing required field `at`"
_placeholder_at = b'"at":"1970-01-01T00:00:00Z",'


class EdgeRefused(Exception):
    """A live input refused before anything was decided: nothing is recorded."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


# ------------------------------------------------------------ who speaks


def refuse_reserved(value: Input, line: int) -> None:
    """Refuse what only the runtime records about itself."""
    kind = value.input_type
    if kind in RESERVED_KINDS:
        raise EdgeRefused(403, "reserved", f"line {line}: {kind} is recorded by the runtime itself, never sent")
    if value.id is not None and value.id.startswith(reserved_id_prefix):
        raise EdgeRefused(
            403,
            "reserved",
            f"line {line}: input ids starting {reserved_id_prefix!r} are the ones the runtime gives the watchdog's "
            "rows it imports; choose another id",
        )


@dataclass(frozen=True, slots=True)
class TokenActor:
    """The HTTP rule (the API, the console's forms, the GitHub webhook): the
    token is the actor. An input that names another actor is refused
    (`actor_mismatch`); one that names none is the token's."""

    actor: str

    @property
    def unnamed(self) -> str:
        """Who sends an input that names no actor: the token's actor (its
        rules that depend on the sender are checked for it when decoded)."""
        return self.actor

    def admit(self, value: Input, line: int) -> Input:
        if value.actor is None:
            return msgspec.structs.replace(value, actor=self.actor)
        if value.actor != self.actor:
            raise EdgeRefused(
                403,
                "actor_mismatch",
                f"line {line}: the input says actor {value.actor!r} but the token speaks for {self.actor!r}; "
                "leave `actor` out or send it with that actor's token",
            )
        return value


@dataclass(frozen=True, slots=True)
class SpoolActors:
    """The spool rule: it speaks only for `actors` (the input's sender: its
    `actor`, or the kind's default actor when it names none)."""

    actors: tuple[str, ...]

    @property
    def unnamed(self) -> Unnamed:
        """Who sends an input that names no actor: the kind's default, as in
        a trace (and so it is recorded)."""
        return Unnamed.KIND_DEFAULT

    def admit(self, value: Input, line: int) -> Input:
        if value.sender not in self.actors:
            raise EdgeRefused(
                403,
                "actor_not_spooled",
                f"line {line}: {value.input_type} from {value.sender!r}: the spool speaks only for "
                f"{', '.join(self.actors)} (--spool-actors); send it with that actor's token over HTTP",
            )
        return value


Credential = TokenActor | SpoolActors  # what proved the sender of a live input


# ------------------------------------------------------------ the edge


@dataclass(frozen=True, slots=True)
class LiveEdge:
    """The rules for one batch of live inputs, as data.

    `now`: the runtime's clock (UTC); `not_before`: the store's last input's
    `at` (None for an empty store, or when the caller checks it itself);
    `credential`: who sent them; `recorded`: the input ids the store holds
    (a retry's id is among them)."""

    now: datetime.datetime
    not_before: datetime.datetime | None
    credential: Credential
    recorded: Container[str] = frozenset()

    def admit(self, value: Input, line: int) -> Input:
        """`value` as it will be recorded: nothing reserved, its sender the
        credential's (the token's actor filled in), a retry's `at` raised."""
        refuse_reserved(value, line)
        return self.retried(self.credential.admit(value, line))

    def retried(self, value: Input) -> Input:
        """`value`, and when its `id` is recorded already (a retry, after a
        503 or a lost answer), its `at` raised to the store's last input's
        if earlier: the engine records it as a `duplicate_input` (or an
        `idempotency_conflict`), which is the answer a retry is owed, not an
        `at_before_head` refusal that would leave the client unable to tell
        whether its input was committed. The engine's clock never goes back."""
        if value.id is None or self.not_before is None or value.at >= self.not_before or value.id not in self.recorded:
            return value
        return msgspec.structs.replace(value, at=self.not_before)

    def place(self, value: Input, line: int, stamped: bool, previous: datetime.datetime | None) -> Input:
        """`value` with its `at` checked, or stamped when it gave none.
        `previous`: the `at` of the line before it in this batch, if any."""
        floor = previous if previous is not None else self.not_before
        if stamped:
            at = self.now if floor is None or self.now >= floor else floor
            return msgspec.structs.replace(value, at=at)
        if (value.at - self.now).total_seconds() > at_ahead_max_s:
            raise EdgeRefused(
                409,
                "at_in_future",
                f"line {line}: `at` {format_at(value.at)} is more than {at_ahead_max_s} s ahead of the server's clock "
                f"({format_at(self.now)}); leave `at` out to have it stamped",
            )
        if previous is None and self.not_before is not None and value.at < self.not_before:
            raise EdgeRefused(
                409,
                "at_before_head",
                f"line {line}: `at` {format_at(value.at)} is earlier than the store's last input "
                f"({format_at(self.not_before)}); leave `at` out to have it stamped",
            )
        return value


def decode_live(raw: bytes, unnamed: str | Unnamed = Unnamed.KIND_DEFAULT) -> tuple[Input, bool]:
    """Decode one input that may leave `at` out: (input, stamped). A missing
    `at` is given a placeholder here and the real stamp by `LiveEdge.place`.
    `unnamed`: who sends it if it names no actor (`Credential.unnamed`).
    Raises what `decode_input` raises for anything else."""
    try:
        return decode_input(raw, unnamed), False
    except msgspec.ValidationError as error:
        if str(error) != _missing_at:
            raise
    opening = raw.index(b"{")  # msgspec found an object, so there is one
    return decode_input(raw[: opening + 1] + _placeholder_at + raw[opening + 1 :], unnamed), True
