"""The console's pages (docs/api.md, "The console"): one handler per route,
server-rendered, readable without JavaScript; `?at=POSITION` on any page
shows it as it was then, marked as the past."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request, get
from litestar.params import FromPath
from litestar.response import Response

from tandem.adapters.console.reading import Pick, Seen, position_query, seen
from tandem.adapters.diagrams import LIFECYCLE_NAMES, lifecycle_svg
from tandem.projections import Views
from tandem.adapters.console.signin import signed_in
from tandem.adapters.console.templating import render
from tandem.adapters.http_inputs import raw_tail, service_of
from tandem.adapters.service import ApiError
from tandem.replay.explain import ExplainError, document, to_json
from tandem.replay.timeline import latest_inputs
from tandem.replay.timeline import timeline as timeline_of

HTML = "text/html"
recent_inputs_shown = 10
# Sent by console.js when it refetches a page for its live regions: such a
# fetch shows no flash of its own, so it must not take the one a form left for
# the page the browser is being redirected to (the commit that form made is
# announced on the stream while that redirect is on its way).
refresh_header = "x-tandem-refresh"


Extra = Callable[[Seen], dict[str, Any]]  # more for the template, read as of the views shown


async def page(
    request: Request, template: str, names: tuple[str, ...], more: Extra | None = None, pick: Pick | None = None,
    *, live: bool = True, status: int = 200, **extra: Any,
) -> Response[str]:
    """Sign-in checked, the views read (live or `?at=`), `more` read as of
    the same position (from the reader store, through the log's index once
    it is built), the page rendered. `live=False`: a page the live script
    must not fetch again (a form's answer)."""
    session = await signed_in(request)
    service = service_of(request)
    taken = await seen(service, names, position_query(request.query_params.get("at")), pick)
    if more is not None:
        extra |= await service.reading(lambda: more(taken))
    flash = session.flash
    if refresh_header not in request.headers:  # the live script's refetch leaves it for the page itself
        session.flash = None
    body = render(
        template,
        seen=taken,
        views=taken.views,
        actor=session.actor,
        csrf=session.csrf,
        flash=flash,
        path=request.url.path,
        live=live and not taken.past,
        **extra,
    )
    return Response(body, status_code=status, media_type=HTML, headers={"Cache-Control": "no-store"})


@get("/", include_in_schema=False)
async def overview(request: Request) -> Response[str]:
    service = service_of(request)

    def latest(taken: Seen) -> dict[str, Any]:
        return {"latest": latest_inputs(service.reader, recent_inputs_shown, until=taken.position, index=service.index)}

    return await page(request, "overview.html", ("tasks", "actions", "questions", "alerts", "inbox", "health"), latest)


@get("/tasks", include_in_schema=False)
async def tasks(request: Request) -> Response[str]:
    return await page(request, "tasks.html", ("tasks",))


def _id(request: Request, prefix: str, routed: str) -> str:
    """The id after `prefix`, from the raw path: ids hold `/` and `//`
    (sent percent-encoded, as the pages' links are), which routing folds."""
    return raw_tail(request.scope, prefix) or routed.lstrip("/")


@get("/tasks/{task_id:path}", include_in_schema=False)
async def task(request: Request, task_id: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/tasks/", task_id)

    def its_rows(views: Views) -> dict[str, list[dict[str, Any]]]:
        tasks = views.pick("tasks", [identifier])
        return {"tasks": tasks, "actions": views.pick("actions", tasks[0]["actions"] if tasks else [])}

    return await page(request, "task.html", ("questions",), pick=its_rows, task_id=identifier)


@get("/actions/{operation_id:path}", include_in_schema=False)
async def action(request: Request, operation_id: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/actions/", operation_id)
    chain = _explained(request, identifier, "operation")
    pick: Pick = lambda views: {"actions": views.pick("actions", [identifier])}  # noqa: E731
    return await page(request, "action.html", (), chain, pick, operation_id=identifier)


@get("/explain/{thing:path}", include_in_schema=False)
async def explained(request: Request, thing: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/explain/", thing)
    return await page(request, "explain.html", (), _explained(request, identifier, None), identifier=identifier)


def _explained(request: Request, identifier: str, kind: str | None) -> Extra:
    """`chain`: the explain document of `identifier` (as `tandem explain
    --json`) as of the views shown, or None when nothing is named so then."""
    service = service_of(request)

    def explain(taken: Seen) -> dict[str, Any]:
        try:
            return {"chain": to_json(document(service.reader, identifier, kind=kind, index=service.index, until=taken.position))}
        except ExplainError:
            return {"chain": None}

    return explain


@get("/inbox", include_in_schema=False)
async def inbox(request: Request) -> Response[str]:
    return await page(request, "inbox.html", ("inbox",))


@get("/questions", include_in_schema=False)
async def questions(request: Request) -> Response[str]:
    return await page(request, "questions.html", ("questions", "actions", "tasks"))


@get("/alerts", include_in_schema=False)
async def alerts(request: Request) -> Response[str]:
    return await page(request, "alerts.html", ("alerts",))


@get("/conversations", include_in_schema=False)
async def conversations(request: Request) -> Response[str]:
    return await page(request, "conversations.html", ("conversations",))


@get("/timeline", include_in_schema=False)
async def timeline(request: Request) -> Response[str]:
    """Newest first from `?before=`, else from the views shown (now, or `?at=`)."""
    service = service_of(request)
    parameters = request.query_params
    before = position_query(parameters.get("before"), "before")
    kind, identifier = parameters.get("type") or None, parameters.get("id") or None

    def rows(taken: Seen) -> dict[str, Any]:
        start = before if before is not None else (taken.position + 1 if taken.past else None)
        return {"rows": timeline_of(service.reader, before=start, input_type=kind, identifier=identifier, index=service.index)}

    return await page(request, "timeline.html", ("health",), rows, type=kind, id=identifier)


@get("/lifecycles", include_in_schema=False)
async def lifecycles(request: Request) -> Response[str]:
    return await page(request, "lifecycles.html", (), machines=LIFECYCLE_NAMES)


@get("/lifecycles/{file:str}", include_in_schema=False)
async def lifecycle_drawing(request: Request, file: FromPath[str]) -> Response[bytes]:
    """`/lifecycles/{name}.svg` (a route parameter is a whole path segment)."""
    await signed_in(request)
    name = file.removesuffix(".svg")
    try:
        if name == file:
            raise KeyError(file)
        drawing = lifecycle_svg(name)
    except KeyError:
        raise ApiError(404, "not_found", f"no lifecycle {file!r}; lifecycles: {', '.join(LIFECYCLE_NAMES)}, each NAME.svg") from None
    return Response(drawing, media_type="image/svg+xml", headers={"Cache-Control": "max-age=3600"})


PAGES = [overview, tasks, task, action, explained, inbox, questions, alerts, conversations, timeline, lifecycles, lifecycle_drawing]
