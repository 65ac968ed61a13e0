"""`GET /v1/search?q=` (docs/api.md, "Search", **extension**): the
console's search as JSON, the same answer (adapters/search/results.py's
`SearchResults`), read in a worker thread from the server's search index
and the reader store, as every read is. Any token may search, as any may
read; so may the console's session cookie, as on every read route."""

from __future__ import annotations

import msgspec
from litestar import Request, Response, get
from litestar.openapi.spec import OpenAPIType, Parameter, Schema

from tandem.adapters.api_schema import BEARER, ERRORS_READ, documented
from tandem.adapters.http_inputs import JSON, service_of
from tandem.adapters.search import QueryRefused, SearchResults, search
from tandem.adapters.search.query import query_chars_max, query_words_max
from tandem.adapters.service import ApiError

Q = Parameter(
    name="q",
    param_in="query",
    required=True,
    description=f"what to find: an id (whole, or its beginning), an input kind, an actor, or words of the inputs' text "
    f"(every one); at most {query_chars_max} characters and {query_words_max} words, else 400",
    schema=Schema(type=OpenAPIType.STRING),
)


@get(
    "/v1/search",
    summary="Search the whole log: ids, input kinds, actors, the words of the inputs' text (extension)",
    description="Answered from the search index the server keeps beside the log (docs/operations.md). `indexed` is false "
    "while the store has none yet; `position` says how far it searched.",
    responses=ERRORS_READ,
    operation_class=documented([Q]),
    security=BEARER,
)
async def get_search(request: Request) -> Response[SearchResults]:
    from tandem.adapters.http_api import authenticate  # it lists this route: imported once both are loaded

    await authenticate(request)
    q = request.query_params.get("q")
    if q is None:
        raise ApiError(400, "invalid_query", "?q= is required: what to search for")
    service = service_of(request)
    searching = service.searching
    if searching is None:
        raise ApiError(503, "store_unavailable", "the server is starting: no search yet")

    def answer() -> bytes:
        try:
            return msgspec.json.encode(search(searching.index, service.reader, q))
        except QueryRefused as refused:
            raise ApiError(400, "invalid_query", f"?q=: {refused}") from None

    return Response(await service.reading(answer), media_type=JSON)
