"""tandem.client resends until answered, and an input is applied once
(docs/api.md, "The Python client"): faults injected into a real `tandem
serve` on SQLite (tests/faults/inject), the sync and the async client alike.

- `503 store_unavailable`, twice (the store refuses the write): the third
  try is accepted; the input is recorded once.
- `503 commit_unknown` (the write committed, its answer lost, the store
  could not be asked): the resend is answered `duplicate_input`, and the
  client returns the original's result (`resent`), read from the log.
- a lost answer (the client's timeout passes while the server holds the
  commit): the same, from a connection cut instead of a 503.

Each ends with `tandem verify` clean and the input's id applied exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.client import aio
from tandem.client import AsyncClient, Client, Result, RetryPolicy, inputs
from tests.e2e.serving import Served, store_head
from tests.faults.faults import faults_env, recorded_ids, verified

WRITE = "tandem.adapters.store.sqlite:SQLiteStore._write_rows"
HEAD = "tandem.adapters.store.recorder:RecorderStore.head"
REFUSED = "eventsourcing.persistence:OperationalError"
writes_before = 1  # the conversation's: the faults hit the message's write
held_commit_s = 3  # how long the server holds a commit whose answer the client gives up on
client_timeout_s = 1
# Enough tries that the server's hold always ends within them (tries and
# pauses add up to well over held_commit_s).
PATIENT = RetryPolicy(attempts_max=12, delay_first_s=0.1, delay_max_s=1.0)

FAULTS = {
    "store_unavailable": [{"target": WRITE, "fail_before": REFUSED, "skip": writes_before, "times": 2}],
    "commit_unknown": [
        {"target": WRITE, "fail_after": REFUSED, "skip": writes_before, "times": 1},
        {"target": HEAD, "fail_before": "tandem.replay.port:StoreError", "armed_by": WRITE, "times": 1},
    ],
    "answer_lost": [{"target": WRITE, "sleep_after_s": held_commit_s, "skip": writes_before, "times": 1}],
}
SAID = {
    "store_unavailable": f"tandem-faults: {WRITE} refused with OperationalError",
    "commit_unknown": f"tandem-faults: {HEAD} refused with StoreError",
    "answer_lost": None,
}


def submitted(server: Served, flavour: str, value: inputs.Input) -> Result:
    if flavour == "sync":
        return Client(server.url, server.tokens["human"], timeout_s=client_timeout_s, retry=PATIENT).submit(value)

    async def submit() -> Result:
        async with AsyncClient(server.url, server.tokens["human"], timeout_s=client_timeout_s, retry=PATIENT) as client:
            return await client.submit(value)

    return aio.run(submit())


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_the_client_resends_until_answered_and_the_input_is_applied_once(tmp_path: Path, fault: str, flavour: str) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    with Served(tmp_path, url, "--no-runtime-inputs", env=faults_env(*FAULTS[fault])) as server:
        Client(server.url, server.tokens["daemon"]).submit(
            inputs.OpenConversation(conversation_id="fg", role="foreground", context_limit=200_000, reserve=20_000)
        )
        result = submitted(server, flavour, inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hello"))
        said = SAID[fault]
        assert said is None or said in server.log(), server.log()[-3000:]
        head = store_head(url)
    assert result.accepted and result.id
    # The first try recorded it when the answer was lost: the result is that record's.
    assert result.resent == (fault != "store_unavailable")
    assert [e.type for e in result.events][:2] == ["InputAccepted", "MessageQueued"]
    assert recorded_ids(url)[result.id] == 1 and head >= result.position  # applied once
    assert [(e.position, e.type) for e in result.events] == _events_of(url, result.id)
    verified(url)


def _events_of(url: str, ident: str) -> list[tuple[int, str]]:
    """The events of the accepted record of `ident` and its transaction's
    input (read from the store itself)."""
    from tandem.adapters.store import open_store
    from tandem.domain import events as ev

    store = open_store(url)
    try:
        found: list[tuple[int, str]] = []
        current: Any = None
        for position, event in store.read():
            if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
                current = event if isinstance(event, ev.InputAccepted) and event.input.id == ident else None
            if current is not None:
                found.append((position, type(event).__name__))
        return found
    finally:
        store.close()
