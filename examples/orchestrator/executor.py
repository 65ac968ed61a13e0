"""An executor: a process of its own that does the work the engine claimed.

    python examples/orchestrator/executor.py URL TOKEN_FILE REPO RESOURCE [RESOURCE ...]

Its loop is "take, do, report": each time the stream says the `actions`
view changed, it reads the work queue (`GET /v1/work`), takes the items on
its resources, sends the receipt the item asks for, does the work in the
git repository REPO, and sends the outcome. It keeps nothing of its own:
the queue says what is out with it and what to send back. It ends when the
task it serves is no longer active.

The work is real and small: it writes files (only under the envelope's
`write_paths`), commits them, and reports the commit as the artifact. Where
a model would write the code, a few lines stand in (`WORK`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tandem.client import Client, WorkItem

TASK_ID = "signup"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def write(repo: Path, allowed: list[str], relative: str, text: str) -> None:
    """Write a file, refusing any path outside the envelope's write paths."""
    path = (repo / relative).resolve()
    if not any(path.is_relative_to(Path(root)) for root in allowed):
        raise PermissionError(f"{path} is outside the write paths {allowed}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def backend(repo: Path, allowed: list[str], tandem: Client) -> None:
    rule = validation_rule(tandem)
    check = "EMAIL.fullmatch(address)" if rule == "strict" else '"@" in address'
    write(repo, allowed, "backend/signup.py", (
        '"""The signup API: POST /signup {email} -> 201 or 400."""\n'
        "import re\n\n"
        'EMAIL = re.compile(r"[^@\\s]+@[^@\\s]+\\.[a-z]{2,}")\n'
        "USERS: list[str] = []\n\n\n"
        "def signup(address: str) -> int:\n"
        f"    if not ({check}):\n"
        "        return 400\n"
        "    USERS.append(address.lower())\n"
        "    return 201\n"
    ))


def frontend(repo: Path, allowed: list[str], tandem: Client) -> None:
    write(repo, allowed, "frontend/form.html", (
        '<form method="post" action="/signup">\n'
        '  <label>Email <input type="email" name="email" required></label>\n'
        "  <button>Sign up</button>\n"
        "</form>\n"
    ))


def integration(repo: Path, allowed: list[str], tandem: Client) -> None:
    write(repo, allowed, "tests/test_signup.py", (
        "import re\nimport sys\nfrom pathlib import Path\n\n"
        "ROOT = Path(__file__).resolve().parents[1]\nsys.path.insert(0, str(ROOT / 'backend'))\n"
        "from signup import signup  # noqa: E402\n\n\n"
        "def test_the_form_posts_what_the_api_reads():\n"
        "    form = (ROOT / 'frontend' / 'form.html').read_text()\n"
        "    assert 'action=\"/signup\"' in form and re.search(r'name=\"email\"', form)\n"
        "    assert signup('Ada@example.org') == 201\n"
        "    assert signup('not an address') == 400\n"
    ))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=repo, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"the integration tests failed:\n{run.stdout}{run.stderr}")


def validation_rule(tandem: Client) -> str:
    """The human's answer to the question on the email check ("strict" or
    "simple"), read from the `questions` view."""
    row = tandem.row("questions", (TASK_ID, "email-check"))
    return row["answer"] if row is not None and row["answer"] is not None else "simple"


# Where a model would write the code: the work for each target.
WORK = {"backend": backend, "frontend": frontend, "combined": integration}


def do(tandem: Client, repo: Path, item: WorkItem) -> None:
    """Take the item (its receipt, when it awaits one), do it, report it."""
    envelope = item.envelope
    if item.awaits == "executor.receipt":
        tandem.submit(item.reply("accepted"))
    WORK[envelope.target](repo, envelope.write_paths, tandem)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{item.operation_id}: {envelope.operation} {envelope.target}")
    sha = git(repo, "rev-parse", "HEAD")
    tandem.submit(item.reply("succeeded", "executor.outcome", artifact_revision=f"{envelope.target}@{sha[:12]}",
                             evidence_ref=f"git:{sha}"))
    print(f"executor: {item.operation_id} done at {sha[:12]}", flush=True)


def main(argv: list[str]) -> int:
    url, token_file, repo, *resources = argv
    token = json.loads(Path(token_file).read_text())["executor"]
    with Client(url, token) as tandem:
        for change in tandem.watch(["actions", "tasks"]):
            task = change.replica.row("tasks", TASK_ID)
            if task is not None and task["state"] != "active":
                return 0
            for item in tandem.work().items:
                if item.envelope.resource in resources and not item.stop:
                    do(tandem, Path(repo), item)
    return 1  # the stream ended before the task did


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
