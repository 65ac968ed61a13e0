"""Kill -9 soak (issues 15 and 22): `tandem ingest` and `tandem serve`
SIGKILLed at random moments, and a writer killed under its standby, on SQLite
and PostgreSQL; after every restart or takeover no input is lost or applied
twice, and at the end the views equal an uninterrupted run's and `tandem
verify` is clean.

Short by default (CI); `TANDEM_SOAK=long` for >= 50 kills of a 10,000-input
ingest, >= 20 of a server and >= 10 takeovers (docs/operations.md, "Kill -9 soak"). The
figures are printed at the end of the session (tests/soak/conftest.py).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.serving import store_head, tandem
from tests.soak.conftest import Settings
from tests.soak.soak import (
    Figures,
    SoakClient,
    Whole,
    ingest_soak,
    lost_and_duplicated,
    recorded,
    serve_soak,
    soak_trace,
    takeover_soak,
    trace_ids,
)

pytestmark = pytest.mark.soak


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def soak_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(kind, URL) of a fresh store: an SQLite file, or a PostgreSQL table of its own, dropped after."""
    if request.param == "sqlite":
        yield "sqlite", f"sqlite:///{tmp_path}/soak.db"
        return
    from tests.integration.conftest import _drop_postgres_table, postgres_url, require_postgres

    require_postgres()
    table = f"soak_{secrets.token_hex(6)}"
    separator = "&" if "?" in postgres_url() else "?"
    try:
        yield "postgres", f"{postgres_url()}{separator}table={table}"
    finally:
        _drop_postgres_table(table)


def fresh_like(url: str, directory: Path, name: str) -> str:
    """Another fresh store of the same kind (same database, another table or file)."""
    if url.startswith("sqlite:"):
        return f"sqlite:///{directory}/{name}.db"
    return f"{url}_{name}"


def views(*arguments: str) -> dict[str, object]:
    result = tandem(*arguments, "--json", timeout_s=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def assert_verified(url: str) -> None:
    result = tandem("verify", "--store", url, timeout_s=600)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ingest_killed_at_random_moments(tmp_path: Path, soak_store: tuple[str, str], soak_settings: Settings, soak_figures: list[Figures]) -> None:
    kind, url = soak_store
    settings = soak_settings
    trace = tmp_path / "soak.jsonl"
    trace.write_bytes(soak_trace(settings.ingest_inputs))
    ids = trace_ids(trace.read_bytes())

    # The uninterrupted run, on a fresh store of the same kind; then, timed,
    # a run with nothing left to do (the kills in a start are drawn over it).
    uninterrupted = fresh_like(url, tmp_path, "whole")
    try:
        began = time.monotonic()
        run = tandem("ingest", str(trace), "--store", uninterrupted, "--quiet", timeout_s=600)
        run_s = time.monotonic() - began
        assert run.returncode == 0, run.stderr
        began = time.monotonic()
        run = tandem("ingest", str(trace), "--store", uninterrupted, timeout_s=600)
        start_s = time.monotonic() - began
        events = store_head(uninterrupted)
        whole = Whole(events=events, start_s=start_s, event_s=max(run_s - start_s, 0.0) / events)
        assert f"0 input(s) applied (0 rejected), {len(ids)} already in the store" in run.stderr, run.stderr
        expected = views("show", "--store", uninterrupted)
    finally:
        if kind == "postgres":
            from tests.integration.conftest import _drop_postgres_table

            _drop_postgres_table(uninterrupted.rsplit("table=", 1)[1])

    figures = Figures("ingest", kind, settings.seed, len(ids))
    soak_figures.append(figures)
    log = tmp_path / "ingest.log"
    ingest_soak(trace, url, settings.ingest_kills, whole, settings.seed, log, figures)

    records = recorded(url)
    figures.lost, figures.duplicated = lost_and_duplicated(records, ids)
    assert (figures.lost, figures.duplicated) == (0, 0), figures.line()
    assert records.accepted == ids and not records.rejected, figures.line()
    assert "Traceback" not in log.read_text(), log.read_text()
    assert views("show", "--store", url) == expected, figures.line()
    assert_verified(url)
    assert figures.kills == settings.ingest_kills, f"the ingest finished after {figures.kills} kills: {figures.line()}"


def soak_run(directory: Path, command: str, kind: str, inputs: int, seed: int, soak_figures: list[Figures]) -> tuple[Path, Figures]:
    """The trace of `inputs` inputs the client sends, and the run's figures (printed at the end)."""
    trace = directory / "soak.jsonl"
    trace.write_bytes(soak_trace(inputs))
    figures = Figures(command, kind, seed, len(trace_ids(trace.read_bytes())))
    soak_figures.append(figures)
    return trace, figures


def assert_served_as_replayed(url: str, trace: Path, figures: Figures, client: SoakClient) -> None:
    """No input lost or applied twice, in the trace's order; the views an
    uninterrupted replay's; verify clean. A send whose commit beat the kill
    but whose answer did not is recorded once more as a `duplicate_input`
    rejection (docs/api.md): never a second effect; apart from those rows,
    the views are the replay's."""
    ids = trace_ids(trace.read_bytes())
    records = recorded(url)
    figures.lost, figures.duplicated = lost_and_duplicated(records, ids)
    assert (figures.lost, figures.duplicated) == (0, 0), figures.line()
    records.check_prefix(ids, figures.line())
    assert records.accepted == ids
    retried = sum(records.rejected.values())
    assert retried >= client.duplicates
    figures.notes["duplicates recorded"] = retried
    served = views("show", "--store", url)
    rows = served["rejections"]
    assert isinstance(rows, list) and len(rows) == retried and all(row["reason"] == "duplicate_input" for row in rows)
    served["rejections"] = []
    assert served == views("replay", str(trace)), figures.line()
    assert_verified(url)


def test_serve_killed_at_random_moments(tmp_path: Path, soak_store: tuple[str, str], soak_settings: Settings, soak_figures: list[Figures]) -> None:
    kind, url = soak_store
    settings = soak_settings
    trace, figures = soak_run(tmp_path, "serve", kind, settings.serve_inputs, settings.seed, soak_figures)
    client = serve_soak(trace, url, settings.serve_kills, settings.seed, tmp_path, figures)
    figures.notes.update({"requests resent": client.resent, "inputs answered duplicate": client.duplicates})

    assert_served_as_replayed(url, trace, figures, client)
    assert figures.kills == settings.serve_kills, f"the client finished after {figures.kills} kills: {figures.line()}"


def test_standby_takes_over_from_a_writer_killed_at_random_moments(
    tmp_path: Path, soak_store: tuple[str, str], soak_settings: Settings, soak_figures: list[Figures]
) -> None:
    """Issue 22: the serve soak with a standby. Each kill of the writer is a
    takeover; no input lost or applied twice, the views a replay's, verify
    clean (every snapshot a writer wrote checked), the outage measured."""
    kind, url = soak_store
    settings = soak_settings
    trace, figures = soak_run(tmp_path, "takeover", kind, settings.takeover_inputs, settings.seed, soak_figures)
    client = takeover_soak(trace, url, settings.takeovers, settings.seed, tmp_path, figures)
    figures.notes.update({"requests resent": client.resent, "inputs answered duplicate": client.duplicates})

    assert_served_as_replayed(url, trace, figures, client)
    assert figures.notes.get("takeovers") == settings.takeovers, f"the client finished after {figures.kills} kills: {figures.line()}"
