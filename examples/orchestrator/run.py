"""A reference orchestrator on Tandem: the email-signup flow, end to end.

    python examples/orchestrator/run.py [--keep-serving] [--dir DIR]

It starts its own `tandem serve` (a free loopback port, a SQLite store in a
temporary folder), a git repository to work in, and the parts of an
orchestrator, each with its own token, so its own actor:

- the runtime (`daemon`) opens the foreground and the background and binds
  them, and hands the human's message to the foreground's provider;
- the human asks for the feature, delegates it with a grant (only a human
  can grant), and answers the question the foreground asks;
- the foreground (scripted where a model would decide) asks that question;
- the background (background.py) proposes the three actions, revalidates
  what the answer fenced, and completes the task on the CI's evidence;
- two executors (executor.py, processes of their own) do the work the
  engine claims and report it; CI (ci.py, a process) runs the tests on the
  integration commit and reports what it saw as an observation;
- a watchdog beats, so that unattended work may start.

Nothing here polls: every wait is `wait_for` or `watch` on the live stream's
row changes. Nothing here writes JSON by hand: inputs are
`tandem.client.inputs` classes. At the end it prints the task's state, its
actions and the console's address, and checks the store (`tandem verify`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from background import Background  # noqa: E402
from tandem.client import Client, inputs  # noqa: E402

TANDEM = (sys.executable, "-m", "tandem.adapters.cli")  # the `tandem` command of this Python
ACTORS = ("human", "daemon", "background", "foreground", "executor", "source", "watchdog")
wait_s = 60.0  # the longest any one step may take before the run fails


def tokens_file(folder: Path) -> dict[str, str]:
    """A token per actor, in a file only this user may read (tandem serve refuses others)."""
    import secrets

    tokens = {actor: secrets.token_urlsafe(32) for actor in ACTORS}
    path = folder / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"actor": a, "token": t} for a, t in tokens.items()]}))
    path.chmod(0o600)
    (folder / "executor-token.json").write_text(json.dumps({"executor": tokens["executor"], "source": tokens["source"]}))
    (folder / "executor-token.json").chmod(0o600)
    return tokens


@contextmanager
def serving(folder: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`tandem serve` on a free loopback port; stopped (SIGTERM) at the end."""
    command = [*TANDEM, "serve", "--store", f"sqlite:///{folder / 'tandem.db'}",
               "--tokens", str(folder / "tokens.json"), "--listen", "127.0.0.1:0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=folder)
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"tandem serve did not start: {line!r}")
        yield line.removeprefix("listening on "), server
    finally:
        server.terminate()
        server.wait(timeout=wait_s)


def repository(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "orchestrator@example.org"],
                 ["config", "user.name", "Tandem orchestrator"], ["commit", "-q", "--allow-empty", "-m", "empty"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def open_engine(tandem: dict[str, Client], repo: Path) -> None:
    """The runtime's part: the policy, the two conversations, the binding; a first heartbeat."""
    daemon = tandem["daemon"]
    daemon.submit(inputs.SetPolicy(allowed_operations=["worker.start", "worker.test"], write_roots=[str(repo)]))
    daemon.submit(inputs.OpenConversation(conversation_id="fg", role="foreground", context_limit=200_000, reserve=20_000))
    daemon.submit(inputs.OpenConversation(conversation_id="bg", role="background", foreground_id="fg",
                                          context_limit=100_000, reserve=10_000))
    daemon.submit(inputs.BindBackground(conversation_id="bg", foreground_id="fg", generation=1))
    tandem["watchdog"].submit(inputs.Heartbeat(generation=1))


def converse(tandem: dict[str, Client], repo: Path) -> None:
    """The human asks; the runtime hands the message to the foreground's
    provider; the foreground (a model, here scripted) has the human delegate
    the task with a grant, asks its question and ends its turn."""
    tandem["human"].submit(inputs.HumanMessage(conversation_id="fg", message_id="m1", text=(
        "Build email signup: backend API, frontend form, then test them together. Keep it local; do not push.")))
    fg = tandem["daemon"].wait_for("conversations", lambda row: row["conversation_id"] == "fg" and row["deliveries"],
                                   timeout_s=wait_s)
    delivery = fg["deliveries"][-1]
    tandem["daemon"].submit(inputs.ProviderReceipt(delivery_id=delivery["delivery_id"], result="accepted"))
    grant = inputs.GrantRequest(grant_id="g-signup", allowed_operations=["worker.start", "worker.test"],
                                write_roots=[str(repo / "backend"), str(repo / "frontend"), str(repo / "tests")])
    tandem["human"].submit(inputs.DelegateTask(task_id="signup", conversation_id="fg", message_refs=["m1"],
                                               goal="Email signup", grant=grant, constraints={"push": False},
                                               done_when=["the integration tests pass on the combined revision"]))
    tandem["foreground"].submit(inputs.RaiseQuestion(task_id="signup", question_key="email-check", recipient="human",
                                                     blocking_reason="Check email addresses strictly, or only for an @?",
                                                     affected=["op-api"], evidence_revision=1))
    tandem["daemon"].submit(inputs.EndTurn(turn_id=delivery["turn_id"], outcome="completed"))


def answer(human: Client) -> None:
    """The human comes back once the work waits on the question, and
    answers it. An answer raises the task's revision, which fences the
    task's pending actions: the background revalidates them."""
    question = human.wait_for("questions", lambda row: row["state"] == "open", timeout_s=wait_s)
    human.wait_for("actions", lambda row: "question_hold" in row["blocked_by"], key="op-api", timeout_s=wait_s)
    human.submit(inputs.AnswerQuestion(task_id=question["task_id"], question_key=question["question_key"], answer="strict"))


def processes(url: str, folder: Path, repo: Path) -> list[subprocess.Popen[str]]:
    token = str(folder / "executor-token.json")
    started = [[str(HERE / "executor.py"), url, token, str(repo), "wt-backend", "wt-it"],
               [str(HERE / "executor.py"), url, token, str(repo), "wt-frontend"],
               [str(HERE / "ci.py"), url, token, str(repo)]]
    return [subprocess.Popen([sys.executable, *args], text=True) for args in started]


def report(human: Client, url: str, folder: Path, keep_serving: bool) -> dict:
    """The task, its actions and their commits; where to see them."""
    task = human.row("tasks", "signup")
    print(f"\ntask signup: {task['state']} (revision {task['revision']})")
    for operation_id in task["actions"]:
        action = human.row("actions", operation_id)
        print(f"  {operation_id:8} {action['state']:10} {action['artifact_revision']}")
    if keep_serving:
        print(f"\nconsole: {url}/tasks/signup (sign in at {url}/login with the human token in {folder / 'tokens.json'})")
    else:
        print(f"\nconsole: {url}/tasks/signup while it serves: run it with --keep-serving to browse it")
    return task


def run(folder: Path, keep_serving: bool) -> int:
    tokens = tokens_file(folder)
    repo = repository(folder)
    with serving(folder) as (url, server):
        tandem = {actor: Client(url, token) for actor, token in tokens.items()}
        open_engine(tandem, repo)
        background = Background(Client(url, tokens["background"]), Client(url, tokens["watchdog"]), repo, wait_s)
        threads = [threading.Thread(target=background.run, name="background"),
                   threading.Thread(target=answer, args=(Client(url, tokens["human"]),), name="human")]
        for thread in threads:
            thread.start()
        workers = processes(url, folder, repo)
        converse(tandem, repo)
        for thread in threads:
            thread.join(timeout=wait_s * 3)
        codes = [worker.wait(timeout=wait_s) for worker in workers]
        task = report(tandem["human"], url, folder, keep_serving)
        if keep_serving:
            print("serving until Ctrl-C", flush=True)
            try:
                server.wait()
            except KeyboardInterrupt:
                pass
    verify = subprocess.run([*TANDEM, "verify", "--store",
                             f"sqlite:///{folder / 'tandem.db'}"], capture_output=True, text=True)
    print(verify.stdout.strip() or verify.stderr.strip())
    ok = task["state"] == "completed" and codes == [0, 0, 0] and background.error is None and verify.returncode == 0
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="where the store, tokens and repository go (default: a temporary folder)")
    parser.add_argument("--keep-serving", action="store_true", help="keep tandem serve running at the end, for the console")
    args = parser.parse_args(argv)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        return run(args.dir, args.keep_serving)
    folder = Path(tempfile.mkdtemp(prefix="tandem-orchestrator-"))
    try:
        return run(folder, args.keep_serving)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
