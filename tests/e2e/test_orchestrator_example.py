"""The reference orchestrator (examples/orchestrator/) runs to the end
against its own `tandem serve`: the task completes on CI's evidence, after
a question answered late enough to fence the pending work and a
revalidation; the executors' commits are in the repository; the store
verifies clean. And it is built as docs/integrate.md says: inputs are typed
classes, never hand-written JSON; waits are the stream's, never a polling
loop or a sleep."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tandem.adapters.store import open_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "orchestrator"


def test_the_reference_orchestrator_runs_to_the_end(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(EXAMPLE / "run.py"), "--dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "task signup: completed (revision 2)" in run.stdout
    for operation_id in ("op-api", "op-form", "op-it"):
        assert any(line.split()[:2] == [operation_id, "succeeded"] for line in run.stdout.splitlines()), run.stdout
    assert "/tasks/signup" in run.stdout and "verify: clean" in run.stdout
    store = open_store(f"sqlite:///{tmp_path / 'tandem.db'}")
    try:
        kinds = [type(event).__name__ for page in store.read_pages(after=0) for event in page]
    finally:
        store.close()
    for kind in ("QuestionAnswered", "TaskRevised", "ActionRevalidated", "ObservationRecorded", "TaskCompleted"):
        assert kind in kinds, f"no {kind} in the store"
    assert kinds.index("QuestionAnswered") > kinds.index("ActionProposed"), "the answer came before the work: nothing fenced"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=tmp_path / "repo", capture_output=True, text=True, check=True)
    assert [line.split(":")[0] for line in log.stdout.splitlines()[:3]] == ["op-it", "op-form", "op-api"]
    assert "EMAIL.fullmatch" in (tmp_path / "repo" / "backend" / "signup.py").read_text()  # the human's "strict"


def test_the_example_writes_no_json_by_hand_and_never_polls() -> None:
    for path in sorted(EXAMPLE.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
                assert "type" not in keys, f"{path.name}:{node.lineno}: an input written as a dict"
            if isinstance(node, ast.While):
                raise AssertionError(f"{path.name}:{node.lineno}: a while loop (waits are watch/wait_for)")
            if isinstance(node, ast.Attribute) and node.attr == "sleep":
                raise AssertionError(f"{path.name}:{node.lineno}: a sleep (waits are watch/wait_for)")
