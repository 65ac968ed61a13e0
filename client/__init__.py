"""The Python client of `tandem serve` (docs/api.md, "The Python client").

    from tandem.client import Client, AsyncClient, Rejected, ApiError, inputs

    with Client("http://127.0.0.1:8765", token) as tandem:
        try:
            result = tandem.submit(inputs.HumanMessage(conversation_id="fg", message_id="m3", text="ship it"))
        except Rejected as rejected:
            rejected.code, rejected.message, rejected.input
        tandem.view("actions").rows
        for message in tandem.stream(last_event_id=result.position):
            ...

`Client` is sync (one kept-alive socket, httptools), `AsyncClient` the same
surface for asyncio (httpx). Inputs are typed (`tandem.client.inputs`, one
class per kind, made from the domain's), checked before they are sent, given
an `id` when they have none, and resent with it on a lost connection or a
503 (`RetryPolicy`). Results are typed (`tandem.client.results`).
"""

from __future__ import annotations

from tandem.client import inputs
from tandem.client.asynchronous import AsyncClient
from tandem.client.errors import ApiError, BatchRejected, Rejected
from tandem.client.protocol import RetryPolicy
from tandem.client.replica import Change, Replica
from tandem.client.results import (
    ROW_KEYS,
    BatchResult,
    Event,
    EventPage,
    EventRef,
    Explained,
    Health,
    InputRef,
    Message,
    Result,
    View,
    Views,
    Work,
    WorkItem,
)
from tandem.client.sync import Client

__all__ = [
    "Client",
    "AsyncClient",
    "RetryPolicy",
    "ApiError",
    "Rejected",
    "BatchRejected",
    "Result",
    "BatchResult",
    "EventRef",
    "View",
    "Views",
    "Event",
    "EventPage",
    "InputRef",
    "Explained",
    "Health",
    "Message",
    "ROW_KEYS",
    "Work",
    "WorkItem",
    "Change",
    "Replica",
    "inputs",
]
