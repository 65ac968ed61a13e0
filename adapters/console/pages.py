"""The console's pages (docs/api.md, "The console"): one handler per route,
server-rendered, readable without JavaScript; `?at=POSITION` on any page
shows it as it was then, marked as the past."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, get_args

import msgspec
from litestar import Request, get
from litestar.params import FromPath
from litestar.response import Response

from tandem.adapters.console.alert_reasons import AlertReason, alert_reasons
from tandem.adapters.console.holds import action_blocks, picked_rows, task_holds
from tandem.adapters.console.lists import Window, choice_query, count, listed, live_rows, page_query, page_rows, retained, window
from tandem.adapters.console.reading import Pick, Seen, position_query, seen
from tandem.adapters.console.timeline_query import asked, scrubbed
from tandem.adapters.diagrams import LIFECYCLE_NAMES, lifecycle_svg
from tandem.projections import Views
from tandem.projections.rows import ActionState
from tandem.adapters.console.signin import signed_in
from tandem.adapters.console.templating import by_priority, render
from tandem.adapters.http_inputs import raw_tail, service_of
from tandem.adapters.service import ApiError, Service
from tandem.adapters.tokens import ACTORS
from tandem.domain.inputs import INPUT_KINDS
from tandem.replay.explain import ExplainError, document, to_json
from tandem.replay.input_timeline import input_timeline
from tandem.replay.timeline import latest_inputs

HTML = "text/html"
recent_inputs_shown = 10
needs_shown = 5  # the overview's open questions and raised alerts, each list's first (the rest: "N more", linked)
overview_tasks_shown = page_rows  # the overview's newest tasks (the rest: "N more", linked)
# Where a page shows history beside the live: the resolved alerts among every
# state's, each conversation's deliveries (10 a page).
history_shown = 10
ignored_shown = 100  # the inbox's causes with ignored observations, newest first (the rest counted)
# The filters a count links to: the values the views hold (docs/contract/views.md).
TASK_STATES = ("active", "completed", "cancelled")
ACTION_STATES = get_args(ActionState)
ALERT_STATES = ("raised", "seen", "resolved")
TRIAGE_STATES = ("untriaged", "triaged")
# Sent by console.js when it refetches a page for its live regions: such a
# fetch shows no flash of its own, so it must not take the one a form left for
# the page the browser is being redirected to (the commit that form made is
# announced on the stream while that redirect is on its way).
refresh_header = "x-tandem-refresh"


Extra = Callable[[Seen], dict[str, Any]]  # more for the template, read as of the views shown
Found = Callable[[Seen, dict[str, Any]], bool]  # whether the page's thing is named in the views shown
FoundNow = Callable[[], Awaitable[bool]]  # whether it is named now (a page of the past that did not have it yet)


async def page(
    request: Request, template: str, names: tuple[str, ...], more: Extra | None = None, pick: Pick | None = None,
    *, live: bool = True, status: int = 200, found: Found | None = None, found_now: FoundNow | None = None, **extra: Any,
) -> Response[str]:
    """Sign-in checked, the views read (live or `?at=`), `more` read as of
    the same position (from the reader store, through the log's index once
    it is built), the page rendered. `live=False`: a page the live script
    must not fetch again (a form's answer). `found`: a page about one thing
    that names nothing answers 404, still a page, and live: it shows the
    thing once an input names it; in the past (`?at=`), only if it names
    nothing now either (`found_now`): else it says the thing came later, and
    links it."""
    session = await signed_in(request)
    service = service_of(request)
    taken = await seen(service, names, scrubbed(request.query_params), pick)
    if more is not None:
        extra |= await service.reading(lambda: more(taken))
    if found is not None and not found(taken, extra):
        if not (taken.past and found_now is not None and await found_now()):
            status = 404
    flash = session.flash
    if refresh_header not in request.headers:  # the live script's refetch leaves it for the page itself
        session.flash = None
    elif status == 404:
        status = 200  # the live script's refetch of a page naming nothing yet: the page, not an error to log
    body = render(
        template,
        seen=taken,
        views=taken.views,
        actor=session.actor,
        csrf=session.csrf,
        flash=flash,
        path=request.url.path,
        live=live and not taken.past,
        status=status,
        **extra,
    )
    return Response(body, status_code=status, media_type=HTML, headers={"Cache-Control": "no-store"})


def _reasons(service: Service, taken: Seen, alerts: list[dict[str, Any]]) -> dict[str, AlertReason]:
    ids = [alert["alert_id"] for alert in alerts]
    return alert_reasons(service.reader, service.index, ids, taken.position)


@get("/", include_in_schema=False)
async def overview(request: Request) -> Response[str]:
    service = service_of(request)

    def needs(views: Views) -> dict[str, Any]:
        raised = listed(views, "alerts", ("raised",), 1, needs_shown, newest_first=False)  # the longest waiting first
        return {
            "open_questions": sorted(live_rows(views, "questions", ("open",)), key=lambda q: q["first_seen_at"]),
            "raised": raised,
            "held": len(live_rows(views, "actions", ("pending",), lambda a: bool(a["blocked_by"]))),
            "active": count(views, "tasks", ("active",)),
            "untriaged": sum(1 for u in retained(views) if u["triage_state"] == "untriaged"),
            "listed": listed(views, "tasks", None, 1, overview_tasks_shown),
        }

    def latest(taken: Seen) -> dict[str, Any]:
        return {
            "latest": latest_inputs(service.reader, recent_inputs_shown, until=taken.position, index=service.index),
            "reasons": _reasons(service, taken, list(taken.views["raised"].rows)),
        }

    return await page(request, "overview.html", ("health",), latest, needs, shown=needs_shown)


@get("/tasks", include_in_schema=False)
async def tasks(request: Request) -> Response[str]:
    """Every task newest first, or those in `?state=` (`?page=N`), each with what holds it."""
    state = choice_query("state", request.query_params.get("state"), TASK_STATES)
    number = page_query(request.query_params.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        rows = listed(views, "tasks", None if state is None else (state,), number)
        held = picked_rows(views)
        every = len(views.by_name["tasks"].rows)  # type: ignore[attr-defined]
        return {"listed": rows, "every": every, "holds": {t["task_id"]: task_holds(held, t) for t in rows.rows}}

    return await page(request, "tasks.html", (), pick=shown, state=state)


@get("/actions", include_in_schema=False)
async def actions(request: Request) -> Response[str]:
    """**Extension**: every action newest first (`?state=`, `?held=1`: pending and blocked), what blocks each named and linked."""
    parameters = request.query_params
    state = choice_query("state", parameters.get("state"), ACTION_STATES)
    held = choice_query("held", parameters.get("held"), ("1",)) is not None
    number = page_query(parameters.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        if held:  # the held ones are pending: live, few
            rows = [a for a in live_rows(views, "actions", ("pending",), lambda a: bool(a["blocked_by"])) if state in (None, "pending")]
            found = window(rows, number)
        else:
            found = listed(views, "actions", None if state is None else (state,), number)
        everything = picked_rows(views)
        every = len(views.by_name["actions"].rows)  # type: ignore[attr-defined]
        return {"listed": found, "every": every, "blocks": {a["operation_id"]: action_blocks(everything, a) for a in found.rows}}

    return await page(request, "actions.html", (), pick=shown, state=state, held="1" if held else None)


def _id(request: Request, prefix: str, routed: str) -> str:
    """The id after `prefix`, from the raw path: ids hold `/` and `//`
    (sent percent-encoded, as the pages' links are), which routing folds."""
    return raw_tail(request.scope, prefix) or routed.lstrip("/")


@get("/tasks/{task_id:path}", include_in_schema=False)
async def task(request: Request, task_id: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/tasks/", task_id)

    def its_rows(views: Views) -> dict[str, Any]:
        tasks = views.pick("tasks", [identifier])
        actions = views.pick("actions", tasks[0]["actions"] if tasks else [])
        questions: Any = views.by_name["questions"]
        outside = {p for row in actions for p in row["prerequisites"]} - {row["operation_id"] for row in actions}
        rows = picked_rows(views)
        holds = task_holds(rows, tasks[0]) if tasks else []
        blocks = {a["operation_id"]: action_blocks(rows, a) for a in actions}
        return {
            "tasks": tasks, "actions": actions + views.pick("actions", outside), "holds": holds, "blocks": blocks,  # its graph draws both
            "questions": questions.listed(questions.by_task.get(identifier, [])),
        }  # fmt: skip

    return await page(
        request, "task.html", (), pick=its_rows, task_id=identifier, found=_named("tasks"),
        found_now=_named_now(request, "tasks", identifier),
    )  # fmt: skip


def _named(view: str) -> Found:
    return lambda taken, extra: bool(taken.views[view])


def _named_now(request: Request, view: str, identifier: str) -> FoundNow:
    service = service_of(request)

    async def now() -> bool:
        return await service.with_engine(lambda: bool(service.engine.views.pick(view, [identifier])))  # type: ignore[union-attr]

    return now


@get("/actions/{operation_id:path}", include_in_schema=False)
async def action(request: Request, operation_id: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/actions/", operation_id)
    chain = _explained(request, identifier, "operation")

    def its_rows(views: Views) -> dict[str, Any]:
        actions = views.pick("actions", [identifier])
        return {"actions": actions, "blocks": action_blocks(picked_rows(views), actions[0]) if actions else []}

    return await page(
        request, "action.html", (), chain, its_rows, operation_id=identifier, found=_named("actions"),
        found_now=_named_now(request, "actions", identifier),
    )  # fmt: skip


@get("/explain/{thing:path}", include_in_schema=False)
async def explained(request: Request, thing: FromPath[str]) -> Response[str]:
    identifier = _id(request, "/explain/", thing)
    service = service_of(request)
    chain = _explained(request, identifier, None)

    async def now() -> bool:
        return await service.reading(lambda: _explains(service, identifier))

    return await page(
        request, "explain.html", (), chain, identifier=identifier, found=lambda taken, extra: extra["chain"] is not None,
        found_now=now,
    )  # fmt: skip


def _explains(service: Service, identifier: str) -> bool:
    try:
        document(service.reader, identifier, index=service.index)
    except ExplainError:
        return False
    return True


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
    triage = choice_query("triage", request.query_params.get("triage"), TRIAGE_STATES)
    number = page_query(request.query_params.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        pending = by_priority([u for u in retained(views) if triage is None or u["triage_state"] == triage])
        view: Any = views.by_name["inbox"]
        ignoring = list(view.ignoring)
        ignored = view.listed(reversed(ignoring[-ignored_shown:]))
        return {"listed": window(pending, number), "ignored": ignored, "ignored_more": len(ignoring) - len(ignored)}

    return await page(request, "inbox.html", (), pick=shown, triage=triage)


@get("/questions", include_in_schema=False)
async def questions(request: Request) -> Response[str]:
    """The open questions, oldest first; the answered ones newest first (`?page=N`)."""
    number = page_query(request.query_params.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        open_questions = sorted(live_rows(views, "questions", ("open",)), key=lambda q: q["first_seen_at"])
        return {"open_questions": open_questions, "answered": listed(views, "questions", ("answered",), number)}

    return await page(request, "questions.html", (), pick=shown)


def _alerts_shown(state: str | None, group: str) -> int:
    """Rows of a state's alerts: a page; the resolved ones (history) among every state's, the last few."""
    return history_shown if state is None and group == "resolved" else page_rows


@get("/alerts", include_in_schema=False)
async def alerts(request: Request) -> Response[str]:
    """Each state's alerts newest first (`?state=`: that one alone, `?page=N` of it), each with its reason."""
    service = service_of(request)
    state = choice_query("state", request.query_params.get("state"), ALERT_STATES)
    number = page_query(request.query_params.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        groups = {group: listed(views, "alerts", (group,), number if group == state else 1, _alerts_shown(state, group))
                  for group in ALERT_STATES if state is None or group == state}  # fmt: skip
        return {"groups": groups}

    def reasons(taken: Seen) -> dict[str, Any]:
        return {"reasons": _reasons(service, taken, [a for g in taken.views["groups"].values() for a in g.rows])}

    return await page(request, "alerts.html", (), reasons, shown, state=state)


@get("/conversations", include_in_schema=False)
async def conversations(request: Request) -> Response[str]:
    """Each conversation, its deliveries newest first (`?page=N` of each)."""
    number = page_query(request.query_params.get("page"))

    def shown(views: Views) -> dict[str, Any]:
        view: Any = views.by_name["conversations"]
        rows = []
        for key in sorted(view.rows):  # a few conversations; their deliveries grow with the log
            row = view.rendered(view.rows[key])
            every = row["deliveries"]
            end = max(0, len(every) - (number - 1) * history_shown)  # newest first: page 1 ends at the newest
            deliveries = every[max(0, end - history_shown) : end][::-1]
            rows.append({**copy.deepcopy({**row, "deliveries": []}), "deliveries": Window(copy.deepcopy(deliveries), number, len(every), history_shown)})
        return {"conversations": rows}

    return await page(request, "conversations.html", (), pick=shown)


@get("/timeline", include_in_schema=False)
async def timeline(request: Request) -> Response[str]:
    """The inputs newest first, each with the events it caused, filtered;
    from `?before=`, else from the views shown (now, or `?at=`)."""
    service = service_of(request)
    before = position_query(request.query_params.get("before"), "before")
    filters = asked(request.query_params)

    def rows(taken: Seen) -> dict[str, Any]:
        end = taken.position + 1 if taken.past else None  # the past: nothing after the views shown
        start = before if end is None or (before is not None and before < end) else end
        found = input_timeline(service.reader, before=start, chosen=filters.chosen, index=service.index)
        if end is not None and found.newer is not None and found.newer > end:
            found = msgspec.structs.replace(found, newer=end if found.before < end else None)
        return {"rows": found}

    return await page(request, "timeline.html", (), rows, filters=filters, input_kinds=INPUT_KINDS, actors=ACTORS)


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


PAGES = [overview, tasks, actions, task, action, explained, inbox, questions, alerts, conversations, timeline, lifecycles, lifecycle_drawing]
