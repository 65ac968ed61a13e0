"""A client generated from the served `/openapi.json` works (docs/api.md,
"Generated clients"): openapi-python-client (the test extra) generates one
from a real `tandem serve`'s document into a temporary folder, skipping
nothing but the NDJSON bodies it cannot send; imported, it calls the server:
health, single inputs, a batch (the JSON array of POST /v1/inputs/batch), a
view and the work queue, each answer decoded into its generated model."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.serving import Served

PACKAGE = "tandem_generated_client"
generate_timeout_s = 300


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[tuple[Served, Any]]:
    with Served(tmp_path, f"sqlite:///{tmp_path / 'generated.db'}", "--no-runtime-inputs") as server:
        spec = tmp_path / "openapi.json"
        spec.write_bytes(urllib.request.urlopen(f"{server.url}/openapi.json", timeout=30).read())
        config = tmp_path / "config.yaml"
        config.write_text("post_hooks: []\n")  # the code as generated: no formatter needed
        done = subprocess.run(
            [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(spec), "--output-path",
             str(tmp_path / PACKAGE), "--meta", "none", "--config", str(config)],
            capture_output=True, text=True, timeout=generate_timeout_s,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        # What it skipped: the NDJSON alternative of the two input routes, nothing else.
        told = done.stdout + done.stderr
        assert re.findall(r"WARNING parsing (\S+ \S+) ", told) == ["POST /v1/inputs", "POST /v1/inputs/batch"], told
        assert told.count("Unsupported content type application/x-ndjson") == 2 and "ERROR" not in told, told
        sys.path.insert(0, str(tmp_path))
        try:
            yield server, importlib.import_module(PACKAGE)
        finally:
            sys.path.remove(str(tmp_path))
            for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
                del sys.modules[name]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_a_generated_client_calls_a_real_serve(generated: tuple[Served, Any]) -> None:
    server, client_module = generated
    models = module("models")
    api = "api.default."

    def client(actor: str) -> Any:
        return client_module.AuthenticatedClient(base_url=server.url, token=server.tokens[actor])

    def accepted(answer: Any) -> int:
        assert isinstance(answer, models.InputsResponse), answer
        assert [result.accepted for result in answer.results] == [True] * len(answer.results)
        return int(answer.position)

    health = module(api + "v1_health_get_health").sync(client=client("human"))
    assert isinstance(health, models.Health) and (health.status, health.writer) == ("ok", True)

    submit = module(api + "v1_inputs_post_inputs").sync
    batch = module(api + "v1_inputs_batch_post_inputs_batch").sync
    daemon = client("daemon")
    accepted(submit(client=daemon, body=models.SetPolicy.from_dict({"type": "policy.set", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]})))
    opened = batch(client=daemon, body=[
        models.OpenConversation.from_dict({"type": "conversation.open", "conversation_id": conversation, "role": "foreground", "context_limit": 1000, "reserve": 100})
        for conversation in ("fg", "fg2")
    ])  # fmt: skip
    position = accepted(opened)
    assert [result.line for result in opened.results] == [1, 2]  # one transaction: item N is line N
    human = client("human")
    accepted(submit(client=human, body=models.HumanMessage.from_dict({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "go"})))
    accepted(submit(client=human, body=models.DelegateTask.from_dict({
        "type": "task.delegate", "task_id": "t", "conversation_id": "fg", "message_refs": ["m1"], "goal": "g", "done_when": ["d"],
        "grant": {"grant_id": "g", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
    })))  # fmt: skip
    position = accepted(submit(client=human, body=models.ProposeAction.from_dict({
        "type": "action.propose", "actor": "human", "operation_id": "op-1", "cause_key": "t:1", "operation": "worker.start",
        "target": "it", "resource": "wt", "write_paths": ["/repo/x"], "task_id": "t", "grant_id": "g",
        "input_revisions": {"grant": 1}, "unattended": False,
    })))  # fmt: skip

    view = module(api + "v1_views_name_get_view").sync(name=models.V1ViewsNameGetViewName("actions"), client=human)
    assert isinstance(view, models.ActionsView) and view.position == position
    (row,) = view.rows
    assert isinstance(row, models.ActionRow) and (row.operation_id, row.attempt_id, row.target) == ("op-1", "op-1/a1", "it")
    assert isinstance(row.envelope, models.ActionEnvelope) and row.envelope.write_paths == ["/repo/x"]

    work = module(api + "v1_work_get_work").sync(client=client("executor"))
    assert isinstance(work, models.WorkBody) and work.position == position
    (item,) = work.items
    assert (item.attempt_id, item.awaits) == ("op-1/a1", "executor.receipt")
    receipt = item.replies[0]
    accepted(submit(client=client("executor"), body=models.ExecutorReceipt.from_dict(
        {"type": receipt.type_, "operation_id": receipt.operation_id, "attempt_id": receipt.attempt_id, receipt.choose: "accepted"}
    )))  # fmt: skip
    (item,) = module(api + "v1_work_get_work").sync(client=client("executor")).items
    assert (item.attempt_state, item.awaits) == ("accepted", "executor.outcome")
