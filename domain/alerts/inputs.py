"""The input kinds of the alerts area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import ClassVar

from msgspec import UNSET, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Text,
    Time,
)


class RaiseIncident(Input, tag="health.incident"):
    actors: ClassVar[tuple[Actor, ...]] = ("watchdog", "daemon")
    incident_id: Identifier
    kind: Identifier
    detail: Text
    # Contract v1.2 section 4.2: when the prober saw it, and its last successful check.
    observed_at: Time | UnsetType = UNSET
    last_success_at: Time | UnsetType = UNSET


class RecoverIncident(Input, tag="health.recovered"):
    actors: ClassVar[tuple[Actor, ...]] = ("watchdog", "daemon")
    incident_id: Identifier


class StopDaemon(Input, tag="daemon.stop"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    expected: bool


class StartDaemon(Input, tag="daemon.start"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    pass


class Tick(Input, tag="tick"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    pass


class SeeAlert(Input, tag="alert.seen"):
    alert_id: Identifier


class ResolveAlert(Input, tag="alert.resolve"):
    alert_id: Identifier


__all__ = ['RaiseIncident', 'RecoverIncident', 'StopDaemon', 'StartDaemon', 'Tick', 'SeeAlert', 'ResolveAlert']  # every name here is the registry's: `inp.Name`
