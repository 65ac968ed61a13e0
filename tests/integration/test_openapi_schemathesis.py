"""The service against its own `/openapi.json`, with schemathesis, in process.

The app is built as `tandem serve` builds it (adapters/serve.py: the runtime
on a store, `build_app`, `InputsFastPath` in front so that POST /v1/inputs
goes the way it goes on the wire), over a small SQLite store holding the
bundled example. Every operation but the endless stream gets generated
requests, schema-valid and not (query, path, and bodies of both media types
of POST /v1/inputs, built from the inputs' schemas), with a valid bearer
token and without one: no answer may be a 5xx, and each answer's status,
media type and body must be the ones the document declares for it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.python.asgi import get_client
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tandem.adapters.commands.demo import EXAMPLE
from tandem.adapters.http_api import build_app
from tandem.adapters.service import Service
from tandem.adapters.http_inputs import InputsFastPath
from tandem.adapters.ingest import ingest
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.search import start_searching
from tandem.adapters.store import open_store
from tandem.adapters.tokens import ACTORS, load_tokens, new_token, write_tokens_file
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine


@schemathesis.serializer("application/x-ndjson")
def ndjson(context, value) -> bytes:  # type: ignore[no-untyped-def]
    """A batch as the document describes it: its items, one JSON text a line."""
    items = value if isinstance(value, list) else [value]
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Examples per operation and mode: the same ones every run, in seconds. Set
# TANDEM_SCHEMATHESIS_EXAMPLES (e.g. 1500: about two minutes) for a deeper
# run with fresh random examples.
examples_max = int(os.environ.get("TANDEM_SCHEMATHESIS_EXAMPLES", "30"))
derandomized = "TANDEM_SCHEMATHESIS_EXAMPLES" not in os.environ
OPERATIONS = {  # at least these (API.md); every operation the document has is tried
    "POST /v1/inputs",
    "GET /v1/views",
    "GET /v1/views/{name}",
    "GET /v1/events",
    "GET /v1/explain/{id}",
    "GET /v1/health",
    "POST /v1/inputs/batch",
    "GET /v1/work",
    "POST /v1/whatif",
    "GET /v1/search",
}


@dataclass
class Served:
    app: InputsFastPath
    service: Service
    tokens: dict[str, str]

    def bearer(self, actor: str = "human") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[actor]}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory: Path = tmp_path_factory.mktemp("openapi")
    url = f"sqlite:///{directory}/events.db"
    store = open_store(url)
    try:
        ingest(Engine(store), read_trace(str(EXAMPLE)))
    finally:
        store.close()
    tokens = {actor: new_token() for actor in ACTORS}
    write_tokens_file(directory / "tokens.json", tokens)
    runtime = Runtime(Settings(store_url=url))
    runtime.lock_store()
    runtime.open()
    runtime.start()
    reader = open_store(url)
    service = Service(runtime=runtime, reader=reader, tokens=load_tokens(directory / "tokens.json"))
    service.searching = start_searching(url, reader, lambda: True, follower=False)  # as the server's start does
    try:
        yield Served(InputsFastPath(build_app(service), service), service, tokens)
    finally:
        service.searching.close()
        reader.close()
        runtime.close()


def run_operation(  # type: ignore[no-untyped-def]
    operation, mode: GenerationMode, headers: dict[str, str], examples: int, answered: Counter[tuple[str, str, int]]
) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=derandomized,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case) -> None:  # type: ignore[no-untyped-def]
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        answered[(operation.label, case.media_type or "-", response.status_code)] += 1

    check()


def test_every_operation_answers_as_its_openapi_document_says(served: Served) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", served.app).exclude(path="/v1/stream")
    failures: list[str] = []
    seen: set[str] = set()
    answered: Counter[tuple[str, str, int]] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        seen.add(operation.label)
        declared = schema.raw_schema["paths"][operation.path][operation.method.lower()]
        modes = [GenerationMode.POSITIVE]
        if "parameters" in declared or "requestBody" in declared:  # else nothing to get wrong
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            for who, headers, examples in (("with a token", served.bearer(), examples_max), ("without", {}, 5)):
                try:
                    run_operation(operation, mode, headers, examples, answered)
                except Exception as error:  # every operation is tried; all failures are told
                    failures.append(f"{operation.label}, {mode.value}, {who}:\n{error}")
    print("\n" + "\n".join(f"{label} {media} -> {status}: {count}" for (label, media, status), count in sorted(answered.items())))
    assert OPERATIONS <= seen
    assert not failures, "\n\n".join(failures)
    # Generated inputs did reach the engine, one at a time and in batches.
    assert answered[("POST /v1/inputs", "application/json", 200)] > 0
    assert answered[("POST /v1/inputs", "application/x-ndjson", 200)] > 0
    assert answered[("POST /v1/inputs/batch", "application/json", 200)] > 0
    assert answered[("GET /v1/work", "-", 200)] > 0
    assert answered[("POST /v1/whatif", "application/json", 200)] > 0  # generated what-ifs ran
    assert answered[("GET /v1/search", "-", 200)] > 0


def test_health_when_the_store_cannot_be_read_is_the_declared_503(served: Served) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", served.app)
    engine = served.service.runtime.engine
    assert engine is not None
    engine.stale = True  # as after a failed commit whose fold failed too
    try:
        with get_client(served.app) as client:
            response = client.get("/v1/health")
    finally:
        engine.stale = False
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "store_unavailable"
    schema["/v1/health"]["GET"].validate_response(response)
