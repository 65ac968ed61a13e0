"""What the fault tests share: faults injected into a child process, a
load of clients that resend until answered, and reading back what a store
recorded."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.adapters.client import ApiError, Client
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tests.e2e.serving import Served, tandem

INJECT = Path(__file__).resolve().parent / "inject"


def faults_env(*faults: dict[str, Any]) -> dict[str, str]:
    """The environment that gives a child process these faults
    (tests/faults/inject/sitecustomize.py)."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(INJECT) + (os.pathsep + path if path else ""), "TANDEM_FAULTS": json.dumps(list(faults))}


def recorded_ids(url: str) -> Counter[str]:
    """How often each input id is applied in the store (accepted). A resent
    id whose first send was recorded (its answer lost) is recorded again as
    an `InputRejected` `duplicate_input`, the answer a retry is owed: that
    is not applying it twice, and any other rejection of an id fails here."""
    store = open_store(url)
    try:
        counts: Counter[str] = Counter()
        for position, event in store.read():
            if isinstance(event, ev.InputAccepted) and event.input.id is not None:
                counts[event.input.id] += 1
            elif isinstance(event, ev.InputRejected) and event.input.id is not None:
                assert event.reason == "duplicate_input", (position, event.input.id, event.reason)
                counts.setdefault(event.input.id, 0)
        return counts
    finally:
        store.close()


def verified(url: str) -> dict[str, Any]:
    """`tandem verify --json`'s report (it must be clean)."""
    result = tandem("verify", "--store", url, "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], f"verify: {result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    return report


retry_pause_s = 0.01
request_timeout_s = 10


@dataclass
class Load:
    """Clients sending conversation turns (each input with its id, resent
    unchanged until a server answers it) and readers of the views, against
    whichever of `servers` answers; `acknowledged` are the ids a server
    answered 200 (or `duplicate_input`: recorded before)."""

    servers: list[Served]
    conversations: list[str]
    readers: int = 2
    stop: threading.Event = field(default_factory=threading.Event)
    acknowledged: set[str] = field(default_factory=set)
    # Who answered each acknowledged input, and the head after its commit:
    # (index in `servers`, position); none for a duplicate_input answer.
    answers: dict[str, tuple[int, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    outage_s: float = 0.0  # the longest time one input waited for an answer
    threads: list[threading.Thread] = field(default_factory=list)

    def post(self, actor: str, value: dict[str, Any]) -> None:
        began = time.monotonic()
        while not self.stop.is_set():
            for index, server in enumerate(self.servers):
                try:
                    answer = Client(server.url, server.tokens[actor], timeout_s=request_timeout_s).submit(value)
                    self.answers[value["id"]] = (index, int(answer["position"]))
                except ApiError as error:
                    if error.code == "duplicate_input":
                        break
                    if error.code not in ("read_only", "store_unavailable", "commit_unknown"):
                        self.errors.append(f"{value['id']}: {error}")
                        return
                    continue
                except OSError:
                    continue
                break
            else:
                time.sleep(retry_pause_s)
                continue
            self.acknowledged.add(value["id"])
            self.outage_s = max(self.outage_s, time.monotonic() - began)
            return

    def turns(self, conversation: str) -> None:
        number = 0
        while not self.stop.is_set():
            number += 1
            prefix = f"{conversation}-{number}"
            self.post("human", {"type": "human.message", "conversation_id": conversation, "message_id": f"m{number}",
                                "text": "x", "tokens": 3, "id": f"{prefix}-message"})  # fmt: skip
            self.post("daemon", {"type": "provider.receipt", "actor": "daemon", "delivery_id": f"{conversation}/d{number}",
                                 "result": "accepted", "id": f"{prefix}-receipt"})  # fmt: skip
            self.post("daemon", {"type": "turn.ended", "actor": "daemon", "turn_id": f"{conversation}/t{number}",
                                 "outcome": "completed", "id": f"{prefix}-ended"})  # fmt: skip

    def read(self) -> None:
        while not self.stop.is_set():
            for server in self.servers:
                try:
                    Client(server.url, server.tokens["human"], timeout_s=request_timeout_s).views()
                except (ApiError, OSError):
                    pass
            time.sleep(retry_pause_s)

    def start(self) -> Load:
        self.threads = [threading.Thread(target=self.turns, args=(name,), daemon=True) for name in self.conversations]
        self.threads += [threading.Thread(target=self.read, daemon=True) for _ in range(self.readers)]
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(request_timeout_s * 3)


def open_conversations(server: Served, names: list[str]) -> None:
    daemon = server.client("daemon")
    for name in names:
        daemon.submit({"type": "conversation.open", "actor": "daemon", "conversation_id": name, "role": "foreground",
                       "context_limit": 200_000, "reserve": 20_000, "id": f"open-{name}"})  # fmt: skip
