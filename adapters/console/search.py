"""The console's search (`/search?q=`, docs/api.md "The console"): ids,
input kinds, actors and words of the inputs' text over the whole log,
answered from the server's search index (adapters/search/), each thing
linked to its page and to the timeline, each input to the timeline at its
position. A form's answer: not refetched live."""

from __future__ import annotations

from typing import Any

from litestar import Request, get
from litestar.response import Response

from tandem.adapters.console.pages import page
from tandem.adapters.console.reading import Seen
from tandem.adapters.http_inputs import service_of
from tandem.adapters.search import QueryRefused, search
from tandem.adapters.search.query import read_query
from tandem.adapters.search.results import SearchResults, ThingHit
from tandem.adapters.service import ApiError

# The things with a page of their own, by key kind: (heading, page, the page's name), in the order
# shown; `{id}` in a page: the id, percent-encoded. Every thing also links to its explain page and
# to the timeline of its events.
THING_PAGES: dict[str, tuple[str, str, str]] = {
    "task": ("Tasks", "/tasks/{id}", "task"),
    "action": ("Actions (operations)", "/actions/{id}", "action"),
    "question": ("Questions", "/questions", "questions"),
    "alert": ("Alerts", "/alerts", "alerts"),
    "update": ("Updates (causes)", "/inbox", "inbox"),
    "conversation": ("Conversations", "/conversations", "conversations"),
}


def grouped(things: list[ThingHit]) -> list[tuple[str, str, str | None, str | None, list[ThingHit]]]:
    """(kind, heading, page, its name, hits) per kind: those of THING_PAGES first, in
    its order, then the others in the order found; hits keep their order."""
    groups: dict[str, list[ThingHit]] = {}
    for hit in things:
        groups.setdefault(hit.kind, []).append(hit)
    order = [kind for kind in THING_PAGES if kind in groups] + [kind for kind in groups if kind not in THING_PAGES]
    return [(kind, *THING_PAGES.get(kind, (kind, None, None)), groups[kind]) for kind in order]


def run_search(request: Request, q: str, taken: Seen) -> SearchResults | None:
    """The search as of the page's views (all the index holds now, or the log up to `?at=`); None: no index here."""
    service = service_of(request)
    if service.searching is None:
        return None
    return search(service.searching.index, service.reader, q, until=taken.position if taken.past else None)


@get("/search", include_in_schema=False)
async def search_page(request: Request) -> Response[str]:
    q = request.query_params.get("q") or ""
    try:
        read_query(q)
    except QueryRefused as refused:
        raise ApiError(400, "invalid_query", f"?q=: {refused}") from None
    searching = service_of(request).searching
    keeper = searching.keeper if searching is not None else None

    def results(taken: Seen) -> dict[str, Any]:
        found = run_search(request, q, taken)
        return {"results": found, "groups": grouped(found.things) if found is not None else []}

    failing = keeper.failing if keeper is not None else None
    return await page(request, "search.html", (), results, live=False, q=q.strip(), failing=failing)


SEARCH = [search_page]
