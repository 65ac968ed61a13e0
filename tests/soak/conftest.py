"""The soak's settings (short by default, for CI; TANDEM_SOAK=long for the
documented long run, docs/operations.md) and its figures, printed at the end
of the session whatever pytest's capture."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.soak.soak import Figures

_figures: list[Figures] = []


@dataclass(frozen=True)
class Settings:
    ingest_inputs: int
    ingest_kills: int
    serve_inputs: int
    serve_kills: int
    takeovers: int
    takeover_inputs: int
    seed: int


# (ingest inputs, ingest kills, serve inputs, serve kills, standby takeovers,
# inputs of the takeover soak) per store kind
profiles = {
    "short": (2_000, 5, 1_000, 3, 2, 2_000),
    "long": (10_000, 50, 5_000, 20, 10, 10_000),
}


def _count(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    value = int(text)
    if value < 0:
        raise pytest.UsageError(f"{name}={text}: must be 0 or more")
    return value


@pytest.fixture(scope="session")
def soak_settings() -> Settings:
    profile = os.environ.get("TANDEM_SOAK", "short")
    if profile not in profiles:
        raise pytest.UsageError(f"TANDEM_SOAK={profile}: one of {', '.join(profiles)}")
    ingest_inputs, ingest_kills, serve_inputs, serve_kills, takeovers, takeover_inputs = profiles[profile]
    return Settings(
        ingest_inputs=_count("TANDEM_SOAK_INPUTS", ingest_inputs),
        ingest_kills=_count("TANDEM_SOAK_INGEST_KILLS", ingest_kills),
        serve_inputs=_count("TANDEM_SOAK_SERVE_INPUTS", serve_inputs),
        serve_kills=_count("TANDEM_SOAK_SERVE_KILLS", serve_kills),
        takeovers=_count("TANDEM_SOAK_TAKEOVERS", takeovers),
        takeover_inputs=_count("TANDEM_SOAK_TAKEOVER_INPUTS", takeover_inputs),
        seed=_count("TANDEM_SOAK_SEED", secrets.randbits(32)),
    )


@pytest.fixture
def soak_figures() -> Iterator[list[Figures]]:
    """Append a test's Figures here: they are printed even when it fails."""
    found: list[Figures] = []
    yield found
    _figures.extend(found)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _figures:
        terminalreporter.section("kill -9 soak")
        for figures in _figures:
            terminalreporter.write_line(figures.line())
