"""Server-Sent Events, as `GET /v1/stream` sends them (docs/api.md, "Live
changes"): blocks of `id`, `event` and `data` lines ended by a blank line;
comment lines (`: connected`, `: keep-alive`) are skipped. One parser for
the sync and the async client: bytes in, messages out.
"""

from __future__ import annotations

import json

from tandem.client.results import Message


class MessageParser:
    """Feed it the stream's bytes as they come; it gives the whole messages."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, chunk: bytes) -> list[Message]:
        self.pending += chunk
        messages: list[Message] = []
        while b"\n\n" in self.pending:
            block, self.pending = self.pending.split(b"\n\n", 1)
            message = message_of(block.decode("utf-8"))
            if message is not None:
                messages.append(message)
        return messages


def message_of(block: str) -> Message | None:
    """One block's message; None for a block of comments only."""
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    if not data:
        return None
    identifier = fields.get("id")
    position = int(identifier) if identifier and identifier.isascii() and identifier.isdigit() else None
    return Message(position, fields.get("event", "message"), json.loads("\n".join(data)))
