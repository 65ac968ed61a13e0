"""RFC release gate "burst + slow model + throttling -> bounded work" (spec 3.4, section 7 `inbox`):
a burst of 10,000 observations over 50 causes coalesces into exactly 50 inbox updates.

The burst is generated here, deterministically (a seeded PRNG), instead of living in a 10,000-line
fixture. Each source gets a mix of new fingerprints or versions and repeats (unchanged re-polls,
replayed versions), some partial, some deletions; half the burst arrives live (`observe`), half
through the change log (`log.batch`, with entries the cursor already passed re-sent). The expected
inbox is computed in this file straight from spec 3.4's rules, without the engine's code:

- `cause_key` is `comment:{scope}:{source_id}` for a comment, else `{kind}:{scope}`;
- a repeat (its `source_version` already recorded for the source, or without one, its fingerprint
  equal to the source's latest one; a deleted observation never) adds 1 to `repeats` and moves
  `last_seen_at`, nothing else;
- anything else is the cause's next revision, untriaged, and `partial` follows its `complete`.
"""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

OBSERVATIONS = 10_000
CAUSES = 50
LIVE = OBSERVATIONS // 2  # the first half live, the rest in change-log batches
BATCH_ENTRIES = 100
START = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)

HEADER = [
    {"type": "policy.set", "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
    {"type": "conversation.open", "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
    {"type": "conversation.open", "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
    {"type": "background.bind", "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
]


def rfc3339(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Source:
    source_id: str
    kind: str
    scope: str
    versioned: bool  # the provider gives run/edit versions

    @property
    def cause_key(self) -> str:
        if self.kind == "comment":
            return f"comment:{self.scope}:{self.source_id}"
        return f"{self.kind}:{self.scope}"


def sources() -> list[Source]:
    """50 causes: 25 comments (one source each: one cause per comment, several on one PR) and
    25 CI scopes read by two sources each (two sources, one cause)."""
    result = []
    for n in range(25):
        result.append(Source(f"c{n}", "comment", f"https://scm/pr/{n % 5}", versioned=n % 2 == 0))
    for n in range(25):
        for runner in ("gha", "buildkite"):
            result.append(Source(f"{runner}-{n}", "ci", f"https://scm/pr/{100 + n}", versioned=runner == "gha"))
    return result


@dataclass
class Model:
    """Spec 3.4's bookkeeping, written out independently of domain/update.py."""

    latest: dict[str, str] = field(default_factory=dict)  # source -> latest fingerprint
    versions: dict[str, list[str]] = field(default_factory=dict)  # source -> recorded versions
    rows: dict[str, dict] = field(default_factory=dict)  # cause -> expected inbox row
    revised_at: dict[str, str] = field(default_factory=dict)  # cause -> when it got its revision
    deleted: set[str] = field(default_factory=set)  # sources whose latest observation is a deletion

    def observe(self, source: Source, observation: dict, at: str) -> None:
        sid = observation["source_id"]
        version = observation.get("source_version")
        if observation.get("deleted", False):  # news, unless the latest is this very deletion (docs/sources.md)
            repeat = sid in self.deleted and self.latest.get(sid) == observation["fingerprint"]
        elif version is not None:
            repeat = version in self.versions.get(sid, [])
        else:
            repeat = self.latest.get(sid) == observation["fingerprint"]
        cause = source.cause_key
        row = self.rows.get(cause)
        if repeat:
            assert row is not None  # the source's first observation made it
            row["repeats"] += 1
            row["last_seen_at"] = at
            return
        self.latest[sid] = observation["fingerprint"]
        if observation.get("deleted", False):
            self.deleted.add(sid)
        else:
            self.deleted.discard(sid)
        if version is not None:
            self.versions.setdefault(sid, []).append(version)
        if row is None:
            row = self.rows[cause] = {
                "cause_key": cause,
                "revision": 0,
                "kind": source.kind,
                "triage_state": "untriaged",
                "disposition": None,
                "action_priority": None,
                "notification_priority": None,
                "partial": False,
                "repeats": 0,
                "out_of_order": 0,
                "first_seen_at": at,
                "last_seen_at": at,
                "delivered_revision": None,
                "retained": True,
            }
        row["revision"] += 1
        text = observation.get("text")
        row["latest"] = {  # contract v1.1: the cause's latest observation (none here is out of order)
            "status": observation.get("status"),
            "deleted": observation.get("deleted", False),
            "source_time": None,
            "evidence_ref": observation.get("evidence_ref"),
            "excerpt": text[:280] if text is not None else None,
            "truncated": False,
        }
        row["batch_id"] = None  # contract v1.2 section 7.1: no observation here names a batch
        row["ignored"] = 0  # docs/contract/views.md: no observation here is ignored
        row["partial"] = not observation["complete"]
        row["last_seen_at"] = at
        self.revised_at[cause] = at


def generate(seed: int = 20260301) -> tuple[list[dict], Model]:
    """The trace's inputs and, fed the same observations, the model's expected inbox."""
    rng = random.Random(seed)
    all_sources = sources()
    assert len({s.cause_key for s in all_sources}) == CAUSES
    counters: dict[str, int] = {}
    model = Model()
    inputs: list[dict] = []
    clock = START

    def tick() -> str:
        nonlocal clock
        clock += datetime.timedelta(seconds=1)
        return rfc3339(clock)

    for header in HEADER:
        inputs.append({"at": rfc3339(clock), **header})

    def next_observation() -> tuple[Source, dict]:
        source = rng.choice(all_sources)
        sid = source.source_id
        observation: dict = {"source_id": sid, "kind": source.kind, "scope": source.scope}
        roll = rng.random()
        seen = model.versions.get(sid, [])
        if source.versioned:
            if seen and roll < 0.45:  # a version already recorded, re-polled or replayed late
                version = rng.choice(seen)
            else:  # a new run/edit, whose content may equal an earlier one's
                counters[sid] = counters.get(sid, 0) + 1
                version = f"{sid}@{counters[sid]}"
            observation["source_version"] = version
            observation["fingerprint"] = rng.choice(["pass", "fail", "flaky"])
        else:
            latest = model.latest.get(sid)
            if latest is not None and roll < 0.5:  # the unchanged snapshot again
                observation["fingerprint"] = latest
            else:  # a change (which may come back to an earlier content: fail -> pass -> fail)
                observation["fingerprint"] = rng.choice(["h0", "h1", "h2", "h3"])
        observation["complete"] = rng.random() < 0.85
        if rng.random() < 0.02:
            observation["deleted"] = True
        return source, observation

    produced = 0
    while produced < LIVE:  # the first half: live observations
        source, observation = next_observation()
        at = tick()
        inputs.append({"type": "observe", "at": at, "actor": "source", **observation})
        model.observe(source, observation, at)
        produced += 1
    seq = 0
    batch_tail: list[tuple[int, dict]] = []
    while produced < OBSERVATIONS:  # the second half: change-log batches, the last 3 entries re-sent
        at = tick()
        entries = []
        resent = [{"seq": s, "observation": o} for s, o in batch_tail]  # at or below the cursor: skipped
        for _ in range(min(BATCH_ENTRIES, OBSERVATIONS - produced)):
            source, observation = next_observation()
            seq += 1
            entries.append({"seq": seq, "observation": observation})
            model.observe(source, observation, at)
            produced += 1
        batch_tail = [(e["seq"], e["observation"]) for e in entries[-3:]]
        inputs.append(
            {"type": "log.batch", "at": at, "actor": "source", "consumer_id": "scm", "epoch": 1, "entries": resent + entries}
        )
    return inputs, model


def test_burst_of_10000_observations_is_50_updates(tmp_path: Path) -> None:
    inputs, model = generate()
    observed = sum(1 for i in inputs if i["type"] == "observe") + sum(
        len(i["entries"]) for i in inputs if i["type"] == "log.batch"
    )
    assert observed == OBSERVATIONS + 3 * (OBSERVATIONS - LIVE) // BATCH_ENTRIES - 3  # with the re-sent entries
    # The generator really mixes: repeats and new revisions on every path, several revisions per cause.
    rows = model.rows
    assert len(rows) == CAUSES
    assert sum(row["repeats"] for row in rows.values()) > 2_000
    assert sum(row["revision"] for row in rows.values()) > 2_000
    assert any(row["partial"] for row in rows.values()) and not all(row["partial"] for row in rows.values())

    trace = tmp_path / "burst.jsonl"
    trace.write_text("".join(json.dumps(i, separators=(",", ":")) + "\n" for i in inputs), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "replay", str(trace), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    views = json.loads(result.stdout)

    inbox = views["inbox"]
    assert len(inbox) == CAUSES  # coalesced: one update per cause, never one per observation
    expected = [rows[key] for key in sorted(rows)]
    actual_by_cause = {row["cause_key"]: row for row in inbox}
    for row in expected:
        assert actual_by_cause.get(row["cause_key"]) == row, row["cause_key"]
    assert inbox == expected
    assert views["rejections"] == []
    resent = 3 * (sum(1 for i in inputs if i["type"] == "log.batch") - 1)  # every batch but the first re-sends 3
    assert views["consumers"] == [
        {"consumer_id": "scm", "epoch": 1, "seq": OBSERVATIONS - LIVE, "max_deleted_seq": 0, "state": "consuming", "gaps": 0, "skipped": resent}
    ]
    assert views["health"]["backlog"] == {
        "untriaged": CAUSES, "oldest_untriaged_at": min(model.revised_at.values()), "deliverable": 0,  # v1.2 section 3.9
    }  # fmt: skip
