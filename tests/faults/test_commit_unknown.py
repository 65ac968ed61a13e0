"""A 503 tells the truth about what was recorded (issue 22, point 3).

The defect, as an operator saw it: with PostgreSQL sessions terminated,
three POSTs answered `503 store_unavailable` "nothing was recorded"; each
retry came back `duplicate_input`: they had been recorded. A client
without ids would apply them twice; one that trusts the message believes
them lost. Here the commit's answer is lost for real inside a `tandem
serve` (the insert commits, then the connection error is raised: injected
after the call returned, tests/faults/inject):

- the store can be asked: the server asks it, finds the input stored, and
  answers 200 (no retry needed, nothing applied twice);
- it cannot be asked (its next read refused too): `503 commit_unknown`,
  with Retry-After, saying the input may have been recorded; the resend
  with the same id is answered as a duplicate, and it is applied once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.adapters.client import ApiError, Client
from tests.e2e.serving import Served, store_head
from tests.e2e.test_serve_faults import message, open_conversation
from tests.faults.faults import faults_env, recorded_ids, verified

pytestmark = pytest.mark.postgres
INSERT = "tandem.adapters.store.postgres:_LogPostgresRecorder.insert_events"
HEAD = "tandem.adapters.store.recorder:RecorderStore.head"
LOST = "eventsourcing.persistence:OperationalError"
inserts_before = 1  # the conversation's: the fault hits the next insert


def answer_lost(*, askable: bool) -> dict[str, str]:
    faults = [{"target": INSERT, "fail_after": LOST, "skip": inserts_before, "times": 1}]
    if not askable:
        faults.append({"target": HEAD, "fail_before": "tandem.replay.port:StoreError", "armed_by": INSERT, "times": 1})
    return faults_env(*faults)


def test_a_lost_answer_the_store_can_tell_is_answered_200(tmp_path: Path, postgres_store: str) -> None:
    url = postgres_store
    with Served(tmp_path, url, "--no-runtime-inputs", env=answer_lost(askable=True)) as server:
        open_conversation(server)
        answer = server.client("human").submit(message("lost-1", id="lost-1"))
        assert answer["results"][0]["accepted"], answer
        assert int(answer["position"]) == store_head(url)
        assert "tandem-faults: " + INSERT in server.log()  # the answer was lost, for real
    assert recorded_ids(url)["lost-1"] == 1
    verified(url)


def test_a_lost_answer_nobody_can_tell_is_503_commit_unknown_and_a_resend_applies_once(
    tmp_path: Path, postgres_store: str
) -> None:
    url = postgres_store
    with Served(tmp_path, url, "--no-runtime-inputs", env=answer_lost(askable=False)) as server:
        open_conversation(server)
        client = server.client("human")
        with pytest.raises(ApiError) as unknown:
            client.submit(message("lost-2", id="lost-2"))
        assert (unknown.value.status, unknown.value.code) == (503, "commit_unknown")
        assert "may have been recorded" in unknown.value.message and "same id" in unknown.value.message
        assert "nothing was recorded" not in unknown.value.message
        assert unknown.value.retry_after_s == 1
        resent = client.submit(message("lost-2", id="lost-2"))  # the same input, the same id
        assert resent["results"][0]["accepted"] is False and resent["results"][0]["reason"] == "duplicate_input", resent
    assert recorded_ids(url)["lost-2"] == 1  # recorded by the first send, applied once
    verified(url)
