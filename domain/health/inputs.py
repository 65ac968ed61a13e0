"""The input kinds of the health area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import ClassVar

from msgspec import UNSET, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Revision,
    Time,
)


class Heartbeat(Input, tag="watchdog.heartbeat"):
    actors: ClassVar[tuple[Actor, ...]] = ("watchdog",)
    generation: Revision
    beat_at: Time | UnsetType = UNSET  # contract v1.2 section 4.1: when the watchdog wrote it


class ReportProviderReadiness(Input, tag="provider.readiness"):
    """Contract v1.2 section 4.3: a provider account is ready, or not and why."""
    actors: ClassVar[tuple[Actor, ...]] = ("watchdog", "daemon")  # never a model's (contract v1.2 section 4.3)

    provider: Identifier
    ready: bool
    reason: Identifier | UnsetType = UNSET
    auth_expires_at: Time | UnsetType = UNSET
    observed_at: Time | UnsetType = UNSET

    def __post_init__(self) -> None:
        if not self.ready and self.reason is UNSET:
            raise ValueError("`ready: false` needs `reason`")


class SuspendHost(Input, tag="host.suspend"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon", "watchdog")
    pass


class ResumeHost(Input, tag="host.resume"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon", "watchdog")
    pass


__all__ = ['Heartbeat', 'ReportProviderReadiness', 'SuspendHost', 'ResumeHost']  # every name here is the registry's: `inp.Name`
