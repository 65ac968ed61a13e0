"""The background: what it decides, from the views, as they change.

It follows the live stream's row changes (`watch`) and, on each, looks at
the views as they are then (a replica kept equal to the server's) and does
what is due, if anything:

- the foreground's turn is over and its intent is ahead of what was synced:
  sync it (`intent.synced`: work is proposed only against a synced intent);
- the task is active and has no actions: propose the three (the backend, the
  form after it, the integration test after both), against the revisions
  the views show, after a heartbeat from the watchdog;
- an action of the task is `fenced` (the human's answer raised the task's
  revision): revalidate it against the revisions now;
- the integration test succeeded and CI saw that commit pass: complete the
  task on that evidence.

It looks only at a replica at least as new as its own last write, so it
never decides twice on a view that does not show its decision yet: no
bookkeeping of its own. Where a model would choose, the choices are written
out (`PROPOSALS`).
"""

from __future__ import annotations

from pathlib import Path

from tandem.client import Client, Rejected, inputs

TASK_ID = "signup"
FOREGROUND = "fg"
GENERATION = 1
# Refusals that say the views a decision was made on are behind: decide again on the next change.
RETHINK = frozenset({"stale_revision"})

# (operation_id, operation, target, resource, folder, prerequisites): the plan a model would make.
PROPOSALS = (
    ("op-api", "worker.start", "backend", "wt-backend", "backend", ()),
    ("op-form", "worker.start", "frontend", "wt-frontend", "frontend", ("op-api",)),
    ("op-it", "worker.test", "combined", "wt-it", "tests", ("op-api", "op-form")),
)


class Background:
    def __init__(self, tandem: Client, watchdog: Client, repo: Path, wait_s: float) -> None:
        self.tandem, self.watchdog, self.repo, self.wait_s = tandem, watchdog, repo, wait_s
        self.written = 0  # the position after its last write: it decides on nothing older
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            # Every commit, not only those changing the views it reads: its
            # replica must reach its own writes, whatever they changed.
            for change in self.tandem.watch(timeout_s=self.wait_s):
                if change.position >= self.written and self.decide(change.replica):
                    return
        except BaseException as error:  # the run reports it and fails
            self.error = error
            raise

    def submit(self, value: inputs.Input) -> bool:
        """Send a decision; False when it was refused as stale: the views it
        was made on are behind (a revision moved meanwhile), and the next
        change shows them as they are now, to decide again."""
        try:
            self.written = self.tandem.submit(value).position
        except Rejected as rejected:
            if rejected.code not in RETHINK:
                raise
            self.written = rejected.result.position
            return False
        return True

    def decide(self, views) -> bool:
        """What is due on these views; True once the task is no longer active."""
        fg = views.row("conversations", FOREGROUND)
        task = views.row("tasks", TASK_ID)
        if fg is not None and fg["state"] != "running" and fg["intent_revision"] > fg["synced_intent_revision"]:
            self.submit(inputs.SyncIntent(conversation_id=FOREGROUND, intent_revision=fg["intent_revision"],
                                          generation=GENERATION))
            return False
        if task is None or fg is None or fg["intent_revision"] > fg["synced_intent_revision"]:
            return False
        if task["state"] != "active":
            return True
        revisions = inputs.InputRevisions(task=task["revision"], grant=task["grant_revision"], intent=fg["intent_revision"])
        if len(task["actions"]) < len(PROPOSALS):
            self.propose(task, revisions)
            return False
        for operation_id in task["actions"]:
            if views.row("actions", operation_id)["state"] == "fenced":
                self.submit(inputs.RevalidateAction(operation_id=operation_id, input_revisions=revisions,
                                                    generation=GENERATION))
        self.complete_on_ci(views)
        return False

    def propose(self, task: dict, revisions: inputs.InputRevisions) -> None:
        """Propose what is not proposed yet (a stale revision stops it: the next change goes on)."""
        self.watchdog.submit(inputs.Heartbeat(generation=GENERATION))
        for operation_id, operation, target, resource, folder, after in PROPOSALS:
            if operation_id in task["actions"]:
                continue
            proposed = self.submit(inputs.ProposeAction(
                operation_id=operation_id, cause_key=f"{TASK_ID}:{target}", operation=operation, target=target,
                resource=resource, write_paths=[str(self.repo / folder)], task_id=TASK_ID,
                grant_id=task["grant_id"], input_revisions=revisions, generation=GENERATION,
                prerequisites=[inputs.Prerequisite(operation_id=p, outcome="succeeded") for p in after]))
            if not proposed:
                return

    def complete_on_ci(self, views) -> None:
        tested = views.row("actions", "op-it")
        ci = views.row("inbox", f"ci:{TASK_ID}")
        if tested is None or tested["state"] != "succeeded" or ci is None:
            return
        latest = ci["latest"]  # what CI saw last: its status and where to see it (`ci:SHA`)
        commits = {ref.removeprefix("git:") for ref in tested["evidence_refs"] if ref.startswith("git:")}
        if latest["status"] == "success" and latest["evidence_ref"] in {f"ci:{sha}" for sha in commits}:
            self.submit(inputs.CompleteTask(task_id=TASK_ID, evidence_refs=[*tested["evidence_refs"], latest["evidence_ref"]]))
