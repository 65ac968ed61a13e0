"""`tandem serve --stores FILE` (adapters/serve_many.py): several stores, two
of them tables of one PostgreSQL database, served by one real process; each
request goes to the store its credential belongs to, and nothing of one store
reaches another."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from tandem.adapters.client import ApiError, Client
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file
from tests.e2e.serving import Served, postgres_store_url, store_head, tandem

pytestmark = pytest.mark.postgres


class ServedStores(Served):
    """One `tandem serve --stores FILE` of several stores, each with its own tokens."""

    def __init__(self, directory: Path, urls: dict[str, str], *options: str) -> None:
        super().__init__(directory, "", *options, name="stores")
        self.urls = urls
        self.store_tokens: dict[str, dict[str, str]] = {}
        entries = []
        for name, url in urls.items():
            self.store_tokens[name] = {actor: new_token() for actor in ACTORS}
            write_tokens_file(directory / f"{name}-tokens.json", self.store_tokens[name])
            entries.append({"name": name, "store": url, "tokens": f"{name}-tokens.json"})
        self.stores_file = directory / "stores.json"
        self.stores_file.write_text(json.dumps({"stores": entries}))

    def store_options(self) -> list[str]:
        return ["--stores", str(self.stores_file)]

    def client_of(self, store: str, actor: str) -> Client:
        return Client(self.url, self.store_tokens[store][actor])


@pytest.fixture
def urls(tmp_path: Path) -> Iterator[dict[str, str]]:
    alpha, beta = postgres_store_url(), postgres_store_url()
    with_alpha = next(alpha)
    with_beta = next(beta)
    yield {"alpha": with_alpha, "beta": with_beta, "gamma": f"sqlite:///{tmp_path}/gamma.db"}
    for generator in (alpha, beta):
        next(generator, None)  # drops its table


def tick(client: object) -> dict:
    return client.submit({"type": "tick"})  # type: ignore[attr-defined]


def test_each_request_goes_to_the_store_its_token_belongs_to(tmp_path: Path, urls: dict[str, str]) -> None:
    with ServedStores(tmp_path, urls, "--no-runtime-inputs") as served:
        answers = {"alpha": [tick(served.client_of("alpha", "daemon"))]}
        answers["beta"] = [tick(served.client_of("beta", "daemon")) for _ in range(3)]
        assert [answer["results"][0]["accepted"] for answer in answers["alpha"] + answers["beta"]] == [True] * 4
        heads = {name: store_head(url) for name, url in urls.items()}
        assert heads == {"alpha": 1, "beta": 3, "gamma": 0}, heads
        for name in urls:  # each store's token reads its own store only
            events = served.client_of(name, "human").events()["events"]
            assert len(events) == heads[name]
        with pytest.raises(ApiError) as refused:
            served.client("human").events()  # a token of no store's file
        assert refused.value.status == 401
        leaked = httpx.get(  # another store's token in the URL: refused, whatever the header says
            f"{served.url}/v1/events", params={"x": served.store_tokens["beta"]["human"]},
            headers={"authorization": f"Bearer {served.store_tokens['alpha']['human']}"},
        )
        assert leaked.status_code == 401 and "never accepted in the URL" in leaked.text
        health = httpx.get(f"{served.url}/v1/health").json()
        assert health == {
            "status": "ok",
            "stores": {name: {"status": "ok", "position": heads[name], "writer": True} for name in urls},
        }
        assert served.client_of("beta", "human").health() == {"status": "ok", "position": 3, "writer": True}
        assert served.stop() == 0
        assert served.log().count("stopped as asked") == 3 and f"stopped as asked, store {urls['gamma']}" in served.log()
    assert {name: store_head(url) for name, url in urls.items()} == heads  # the stop wrote nothing more (no runtime inputs)


def test_a_console_session_reads_the_store_it_signed_in_to(tmp_path: Path, urls: dict[str, str]) -> None:
    with ServedStores(tmp_path, urls, "--no-runtime-inputs") as served:
        tick(served.client_of("gamma", "daemon"))
        with httpx.Client(base_url=served.url, follow_redirects=False) as browser:
            form = browser.get("/login")
            check = re.search(r'name="check" value="([^"]+)"', form.text)
            assert form.status_code == 200 and check is not None
            signed = browser.post(
                "/login",
                content=urlencode({"check": check.group(1), "token": served.store_tokens["gamma"]["human"], "next": "/"}),
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert signed.status_code == 303, signed.text
            events = browser.get("/v1/events").json()["events"]
            assert [event["type"] for event in events] == ["InputAccepted"]  # gamma's, not alpha's nor beta's
            home = browser.get("/")
            assert home.status_code == 200 and "Sign in" not in home.text
        served.stop()


def test_a_token_in_two_stores_files_is_refused_and_nothing_is_left_locked(tmp_path: Path, urls: dict[str, str]) -> None:
    served = ServedStores(tmp_path, urls)
    shared = served.store_tokens["alpha"]["human"]
    served.store_tokens["gamma"]["human"] = shared
    write_tokens_file(tmp_path / "gamma-tokens.json", served.store_tokens["gamma"])
    done = tandem("serve", "--stores", str(served.stores_file), "--listen", "127.0.0.1:0")
    assert done.returncode == 2
    assert "stores 'alpha' and 'gamma' share a token" in done.stderr
    assert shared not in done.stderr + done.stdout


def test_a_store_another_writer_holds_fails_the_start_naming_it_and_frees_the_others(
    tmp_path: Path, urls: dict[str, str]
) -> None:
    with Served(tmp_path, urls["beta"], "--no-runtime-inputs", name="beta-writer"):
        done = tandem("serve", "--stores", str(ServedStores(tmp_path, urls).stores_file), "--listen", "127.0.0.1:0")
        assert done.returncode == 1
        assert "store beta:" in done.stderr and "locked" in done.stderr, done.stderr
    with Served(tmp_path, urls["alpha"], "--no-runtime-inputs", name="alpha-after") as alone:  # alpha's lock was let go
        assert alone.client("human").health()["writer"] is True


@pytest.mark.parametrize(
    ("file", "said"),
    [
        ('{"stores": []}', "0 stores"),
        ('{"stores": [{"name": "Alpha", "store": "memory:", "tokens": "t.json"}]}', "$.stores[0].name 'Alpha'"),
        ('{"stores": [{"name": "a", "store": "memory:", "tokens": "t.json", "port": 1}]}', "port"),
        ('{"stores": [{"name": "a", "store": "memory:", "tokens": "t.json"}, {"name": "a", "store": "memory:", "tokens": "t.json"}]}', "names two stores"),
    ],
)
def test_a_bad_stores_file_is_refused_naming_what_is_wrong(tmp_path: Path, file: str, said: str) -> None:
    (tmp_path / "stores.json").write_text(file)
    done = tandem("serve", "--stores", str(tmp_path / "stores.json"), "--listen", "127.0.0.1:0")
    assert done.returncode == 2 and said in done.stderr and str(tmp_path / "stores.json") in done.stderr, done.stderr


def test_one_store_options_do_not_go_with_stores(tmp_path: Path) -> None:
    (tmp_path / "stores.json").write_text('{"stores": [{"name": "a", "store": "memory:", "tokens": "t.json"}]}')
    done = tandem("serve", "--stores", str(tmp_path / "stores.json"), "--store", "sqlite:///x.db", "--follow")
    assert done.returncode == 2 and "--follow, --store cannot go with it" in done.stderr, done.stderr
    done = tandem("serve", "--store", "sqlite:///x.db")
    assert done.returncode == 2 and "--tokens FILE" in done.stderr, done.stderr
