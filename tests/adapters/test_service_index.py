"""`tandem serve`'s log index, in process: the lifespan builds it after
startup, the commits keep it current, and GET /v1/explain answers with it
what it answers without it (and what explain prints)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from litestar.testing import TestClient

from tandem.adapters.http_api import build_app
from tandem.adapters.service import Service
from tandem.adapters.ingest import ingest
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.serve import _lifespan
from tandem.adapters.stream import keepalive_s_default
from tandem.adapters.tokens import TokenTable, _digest
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tandem.replay.explain import document, encode_json
from tandem.adapters.store import open_store

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "human-token-" + "x" * 32
EXAMPLE = ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"


def test_explain_is_served_from_the_index_once_it_is_ready(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    writer = Engine(open_store(url), with_views=False, snapshot_every=0)
    ingest(writer, read_trace(str(EXAMPLE)))
    writer.store.close()  # type: ignore[union-attr]
    runtime = Runtime(Settings(store_url=url, runtime_inputs=False))
    runtime.open()
    runtime.start()
    reader = open_store(url)
    service = Service(runtime=runtime, reader=reader, tokens=TokenTable(((_digest(TOKEN), "human"),)))
    args = argparse.Namespace(stream_clients_max=4, stream_keepalive=keepalive_s_default)
    on_startup, on_shutdown = _lifespan(service, args)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        with TestClient(build_app(service, on_startup, on_shutdown)) as client:
            assert service.indexing.wait(10) and service.index_ready
            assert service.index is not None and service.index.head == reader.head()
            for identifier in ("op-form", "op-api/a1", "fg/d2", "signup", "nothing-here"):
                served = client.get(f"/v1/explain/{identifier}", headers=headers)
                if identifier == "nothing-here":
                    assert served.status_code == 404
                    continue
                assert served.content == encode_json(document(reader, identifier)), identifier
            human = {"type": "human.message", "conversation_id": "fg", "message_id": "m-late", "text": "and now?"}
            posted = client.post("/v1/inputs", content=json.dumps(human), headers={**headers, "Content-Type": "application/json"})
            assert posted.status_code == 200, posted.text
            for _ in range(100):  # the listener runs in the commit: no wait is needed, but be kind to slow machines
                if service.index.head == reader.head():
                    break
                time.sleep(0.01)
            assert service.index.head == reader.head()
            served = client.get("/v1/explain/op-form", headers=headers)
            assert json.loads(served.content)["position"] == reader.head()
            assert served.content == encode_json(document(reader, "op-form"))
    finally:
        reader.close()
        runtime.close()
