"""`memory:`: the store in this process only, on eventsourcing's POPO recorder
(tests, and `tandem replay` by default)."""

from __future__ import annotations

from collections.abc import Sequence

from eventsourcing.popo import POPOApplicationRecorder

from tandem.adapters.store.recorder import RecorderStore, log_stream_id
from tandem.replay.port import WriterClaim


class MemoryStore(RecorderStore):
    def __init__(self, url: str) -> None:
        super().__init__(url, POPOApplicationRecorder())
        self._snapshots: dict[tuple[str, int], bytes] = {}
        self._claimed: list[WriterClaim] = []  # no other process can write it: nothing to fence
        self._keys: dict[tuple[str, str], list[int]] = {}
        self._keys_marked: tuple[str, int] | None = None

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

    def _keys_mark(self) -> tuple[str, int] | None:
        return self._keys_marked

    def _keys_select(self, key: tuple[str, str], until: int) -> list[int]:
        return [position for position in self._keys.get(key, ()) if position <= until]

    def _keys_page(self, after: tuple[str, str, int] | None, until: int, limit: int) -> list[tuple[str, str, int]]:
        rows = sorted((kind, identifier, position) for (kind, identifier), positions in self._keys.items() for position in positions)
        return [row for row in rows if row[2] <= until and (after is None or row > after)][:limit]

    def _keys_write(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        mark = self._keys_marked
        current = mark[1] if mark is not None and mark[0] == fingerprint else 0
        if current != after:
            return False
        if mark is not None and mark[0] != fingerprint:
            self._keys.clear()
        for kind, identifier, position in sorted(rows, key=lambda row: row[2]):
            self._keys.setdefault((kind, identifier), []).append(position)
        self._keys_marked = (fingerprint, through)
        return True
