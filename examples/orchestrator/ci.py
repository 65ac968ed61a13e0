"""CI: a process that tests the integration commit and says what it saw.

    python examples/orchestrator/ci.py URL TOKEN_FILE REPO

When the `actions` view shows the integration test (`op-it`) succeeded, it
checks out the commit the executor reported (its evidence `git:SHA`) in a
clean clone, runs the tests there, and reports the result as a `source`:
an `observe` input of kind `ci` on the task's scope, with the commit and its
status. The background completes the task on it. It ends once it reported,
or when the task is no longer active.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tandem.client import Client, inputs

TASK_ID = "signup"


def test_at(repo: Path, sha: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="ci-") as folder:
        subprocess.run(["git", "clone", "-q", str(repo), folder], check=True)
        subprocess.run(["git", "checkout", "-q", sha], cwd=folder, check=True)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                             cwd=folder, capture_output=True, text=True)
        return run.returncode == 0


def main(argv: list[str]) -> int:
    url, token_file, repo = argv
    token = json.loads(Path(token_file).read_text())["source"]
    with Client(url, token) as tandem:
        for change in tandem.watch(["actions", "tasks"]):
            task = change.replica.row("tasks", TASK_ID)
            if task is not None and task["state"] != "active":
                return 0
            tested = change.replica.row("actions", "op-it")
            if tested is None or tested["state"] != "succeeded":
                continue
            sha = next(ref.removeprefix("git:") for ref in tested["evidence_refs"] if ref.startswith("git:"))
            status = "success" if test_at(Path(repo), sha) else "failure"
            tandem.submit(inputs.Observe(source_id=f"ci/{sha[:12]}", kind="ci", scope=TASK_ID, fingerprint=sha,
                                         complete=True, status=status, commit_sha=sha,
                                         text=f"integration tests: {status}", evidence_ref=f"ci:{sha}"))
            print(f"ci: {sha[:12]} {status}", flush=True)
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
