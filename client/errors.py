"""The client's errors: what the server refused (`ApiError`), and an input the
engine recorded as rejected (`Rejected`, `BatchRejected`).

An `ApiError` is an HTTP error answer (docs/api.md, "Errors"): nothing of the
request was recorded, but for `503 commit_unknown` (which the client resends
by itself). A `Rejected` input *was* recorded, as rejected with its reason
(docs/contract/README.md, "Rejections"): it changed nothing else, and
sending it again with the same `id` is answered `duplicate_input`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tandem.domain.reasons import REJECTIONS

if TYPE_CHECKING:
    from tandem.client.results import BatchResult, Result


class ApiError(Exception):
    """An error answer: `status`, `code` (docs/api.md, "Errors"), `message`,
    for 400 the bad lines (`errors`: [{line, message}]), and the answer's
    Retry-After in seconds (`retry_after_s`; every 503 has one)."""

    def __init__(
        self, status: int, code: str, message: str, errors: list[dict[str, Any]] | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status: int = status
        self.code: str = code
        self.message: str = message
        self.errors: list[dict[str, Any]] = errors or []
        self.retry_after_s: float | None = retry_after_s


class Rejected(Exception):
    """An input the engine recorded as rejected: `code` (the reason,
    docs/contract/README.md, "Appendix A"), `message` (its words), `input`
    (as sent, with its `id`) and `result` (its line, `at`, events)."""

    def __init__(self, code: str, input: Any, result: Result) -> None:
        words = REJECTIONS.get(code, "a reason this client does not know")
        super().__init__(f"{getattr(input, 'kind', '?')} {getattr(input, 'id', None)!r} rejected {code}: {words}")
        self.code: str = code
        self.message: str = words
        self.input: Any = input
        self.result: Result = result


class BatchRejected(Exception):
    """Some inputs of a batch were recorded as rejected
    (`BatchResult.raise_for_rejections`): `rejected`, one `Rejected` each, in
    line order, and the whole `result`."""

    def __init__(self, rejected: list[Rejected], result: BatchResult) -> None:
        shown = "; ".join(f"line {r.result.line}: {r.code}" for r in rejected[:5])
        more = f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""
        super().__init__(f"{len(rejected)} of {len(result.results)} inputs rejected: {shown}{more}")
        self.rejected: list[Rejected] = rejected
        self.result: BatchResult = result


def api_error(status: int, data: bytes, retry_after_s: float | None = None) -> ApiError:
    """The ApiError an error answer's body says (`{"error": {code, message}}`)."""
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    error = body.get("error", {}) if isinstance(body, dict) else {}
    errors = body.get("errors") if isinstance(body, dict) else None
    code = error.get("code", "http_error") if isinstance(error, dict) else "http_error"
    message = error.get("message") if isinstance(error, dict) else None
    return ApiError(status, code, message or data[:200].decode(errors="replace"), errors, retry_after_s)
