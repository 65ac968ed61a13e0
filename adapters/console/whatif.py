"""The console's "what if…" (docs/api.md, "The console"): the forms on a
timeline row of an input and on an action's page post here (drop the input,
change one of its fields, move it in time); the answer is the what-if of
that one edit over the served store, as `POST /v1/whatif` computes it
(adapters/service.py, `Service.whatif`: read-only, the engine never held),
shown as a page: the first divergence, each thing decided otherwise with its
state on each side and the steps only one side has, and per view the rows
added, removed and changed.

A form is checked as every console form is (the session's CSRF token; none:
403, nothing run). Nothing is recorded: the fork lives in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from litestar import Request, post
from litestar.response import Response

from tandem.adapters.console.pages import page
from tandem.adapters.console.signin import checked_form, form_bytes_max, local, read_form
from tandem.adapters.http_inputs import service_of
from tandem.adapters.service import ApiError
from tandem.adapters.whatif_render import row_name
from tandem.replay.explain import KINDS
from tandem.replay.whatif import edits as made
from tandem.replay.whatif.edits import Edit, EditInvalid
from tandem.replay.whatif.model import WhatIf

number_digits_max = 18
# What the page lists at most (the API's answer lists everything).
SHOWN = {"things": 200, "steps": 50, "rows": 200}


def _number(text: str | None, what: str) -> int:
    value = (text or "").strip()
    if not (value.isascii() and value.isdigit()) or len(value) > number_digits_max:
        raise EditInvalid(f"{what} {value[:40]!r}: a whole number")
    return int(value)


def _seconds(text: str | None, line: int) -> int | float:
    value = (text or "").strip()
    try:
        return int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise EditInvalid(f"--shift {line}={value[:40]!r}: not a number of seconds (say 3600 or -90)") from None


def edit_of(form: dict[str, str]) -> Edit:
    """The edit a what-if form asks for, as `tandem whatif` would make it."""
    make = FORM_EDITS.get(form.get("op", ""))
    if make is None:
        raise EditInvalid(f"no edit {form.get('op', '')[:40]!r}: drop, set or shift")
    return make(_number(form.get("input"), "input"), form)


@post("/whatif", include_in_schema=False, request_max_body_size=form_bytes_max)
async def whatif(request: Request) -> Response[str]:
    form = await read_form(request)
    back = local(form.get("back") or "/timeline")
    await checked_form(request, form, back)
    result: WhatIf | None = None
    problem: str | None = None
    try:
        result = await service_of(request).whatif([edit_of(form)], None)
    except EditInvalid as invalid:
        problem = str(invalid)
    except ApiError as error:
        if error.code != "bad_edit":
            raise
        problem = error.message
    status = 200 if problem is None else 422
    return await page(
        request, "whatif.html", (), live=False, status=status, result=result, problem=problem, back=back,
        explained=KINDS, row_name=row_name, as_json=_as_json, shown=SHOWN,
    )  # fmt: skip


def _as_json(value: Any) -> str:
    """A value as text (the template escapes it, as every text)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


FORM_EDITS: dict[str, Callable[[int, dict[str, str]], Edit]] = {
    "drop": lambda line, form: made.drop(line),
    "set": lambda line, form: made.set_field(line, form.get("field", "").strip(), made.text_value(form.get("value", ""))),
    "shift": lambda line, form: made.shift(line, _seconds(form.get("seconds"), line)),
}
WHATIF = [whatif]
