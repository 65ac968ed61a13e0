"""The parts every input shares (re-exported by domain/inputs.py, where the
kinds are): the bounds, the field types, the actors each kind accepts, and
the `Input` base. A module of its own so that domain/inputs.py stays under
the file limit.
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, ClassVar, Literal

from msgspec import UNSET, Meta, Struct

# Bounds (principle 7: a limit on everything, units last in the name).
identifier_chars_max = 512
text_chars_max = 262_144
list_items_max = 4_096

Identifier = Annotated[str, Meta(min_length=1, max_length=identifier_chars_max)]
Text = Annotated[str, Meta(max_length=text_chars_max)]
# A tool's name: checked by the engine (`tool_not_exact`, `tool_not_allowed`), so
# an empty one is the input's rejection, not the trace's (contract v1.2 section 1).
ToolName = Annotated[str, Meta(max_length=identifier_chars_max)]
Count = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1)]
Revision = Annotated[int, Meta(ge=0)]
Tokens = Annotated[int, Meta(ge=0)]
Time = Annotated[datetime.datetime, Meta(tz=True)]  # a moment an input reports (a heartbeat's, an incident's)

Actor = Literal["human", "foreground", "background", "daemon", "executor", "source", "watchdog"]

# A kind accepts only `human` unless its class says otherwise (contract section 1).
HUMAN_ONLY: tuple[Actor, ...] = ("human",)


class Unnamed(enum.Enum):
    """Who sends an input that names no `actor`, as its decoder is told
    (`decode_input`); an actor's name (the token's, over HTTP) says it too."""

    KIND_DEFAULT = "the kind's default actor"  # a trace line, a spool file
    UNKNOWN = "not known here"  # the client: its token's actor, which it does not know


def given(value: Any) -> Any:
    """A field's value, or None when the input left it out (UNSET)."""
    return None if value is UNSET else value


class Input(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", kw_only=True):
    """Fields every input carries (contract section 1). `actors`: the actors
    a kind accepts, the first its default, declared on the kind's class."""

    actors: ClassVar[tuple[Actor, ...]] = HUMAN_ONLY
    at: Annotated[datetime.datetime, Meta(tz=True)]
    actor: Actor | None = None
    id: Identifier | None = None

    @property
    def input_type(self) -> str:
        """The `type` of the trace line (the kind of input)."""
        return self.__struct_config__.tag  # type: ignore[return-value]

    @property
    def sender(self) -> str:
        """The actor, or the kind's default actor when none was given."""
        return self.actor if self.actor is not None else self.actors[0]

    def check_sent_by(self, sender: str | None) -> None:
        """The kind's rules that depend on who sends it (ValueError), with
        the rules between its fields that come after them: none unless the
        kind has some. `sender` None: not known (the client's check), and the
        rules that need it pass.

        A kind with such rules runs them from `__post_init__` only when the
        input names its actor; one that names none is checked by
        `decode_input` once it knows who the sender will be recorded as (the
        kind's default in a trace, the token's actor over HTTP)."""

    def check_named_sender(self) -> None:
        """`__post_init__` of a kind with rules that depend on who sends it."""
        if self.actor is not None:
            self.check_sent_by(self.actor)


def require_from(value: Input, sender: str | None, actor: str, name: str) -> None:
    """Field `name` is required when `actor` sends `value` (contract: "from `background`")."""
    if sender == actor and getattr(value, name) is UNSET:
        raise ValueError(f"`{name}` is required when the actor is {actor}")


def require_one_of(value: Input, *names: str) -> None:
    if all(getattr(value, name) is UNSET for name in names):
        raise ValueError(f"{value.input_type} needs at least one of " + ", ".join(f"`{n}`" for n in names))


def require_exactly_one(value: Input, first: str, second: str) -> None:
    given = [name for name in (first, second) if getattr(value, name) is not UNSET]
    if len(given) != 1:
        raise ValueError(f"{value.input_type} needs exactly one of `{first}` and `{second}`")
