"""`memory:`: the store in this process only, on eventsourcing's POPO recorder
(tests, and `tandem replay` by default)."""

from __future__ import annotations

from eventsourcing.popo import POPOApplicationRecorder

from tandem.adapters.store.recorder import RecorderStore, log_stream_id
from tandem.replay.port import WriterClaim


class MemoryStore(RecorderStore):
    def __init__(self, url: str) -> None:
        super().__init__(url, POPOApplicationRecorder())
        self._snapshots: dict[tuple[str, int], bytes] = {}
        self._claimed: list[WriterClaim] = []  # no other process can write it: nothing to fence

    def _claim(self, pid: int | None, host: str, since: str) -> WriterClaim:
        claim = WriterClaim(len(self._claimed) + 1, self._select_head(), pid, host, since)
        self._claimed.append(claim)
        return claim

    def _claims(self) -> list[tuple[int, int, int | None, str, str]]:
        return [tuple(claim) for claim in self._claimed]  # type: ignore[misc]

    def _select_head(self) -> int:
        last = self._recorder.select_events(log_stream_id, desc=True, limit=1)
        return last[0].originator_version if last else 0

    def _select_page(self, after: int, until: int | None, limit: int) -> list[tuple[int, bytes]]:
        stored = self._recorder.select_events(log_stream_id, gt=after, lte=until, limit=limit)
        return [(s.originator_version, s.state) for s in stored]

    def _select_positions(self, positions: list[int]) -> list[tuple[int, bytes]]:
        # The POPO recorder's own index (eventsourcing 9.5: position -> row),
        # read under its lock: its public `select_events` walks the stream
        # from its start for every call.
        recorder = self._recorder
        with recorder._database_lock:
            rows = recorder._stored_events_index.get(log_stream_id, {})
            stored = recorder._stored_events
            return [(position, stored[rows[position]].state) for position in positions if position in rows]

    def _snapshot_write(self, position: int, fingerprint: str, body: bytes) -> None:
        self._snapshots[(fingerprint, position)] = body

    def _snapshot_latest(self, fingerprint: str, until: int | None) -> tuple[int, bytes] | None:
        positions = [
            position
            for (kept, position) in self._snapshots
            if kept == fingerprint and (until is None or position <= until)
        ]
        if not positions:
            return None
        position = max(positions)
        return position, self._snapshots[(fingerprint, position)]

    def _snapshot_list(self) -> list[tuple[int, str, int]]:
        return sorted((position, fingerprint, len(body)) for (fingerprint, position), body in self._snapshots.items())

    def _snapshot_delete(self, position: int, fingerprint: str) -> None:
        self._snapshots.pop((fingerprint, position), None)
