"""The files `tandem serve` trusts (issue 22): a tokens file, a GitHub secret
file or a `--stores` file owned by another user, or a JSON one with a key
repeated anywhere, is refused before anything is opened or listens.

Seen by an operator: a tokens file owned by another user was accepted (that
user could rewrite who is trusted), and so was one with a repeated `actor`
key (`{"actor": "human", "actor": "model", ...}`: "last wins" here, "first
wins" in another reader: the file meant one actor to its writer's tool and
another to the server).

Giving a file to another uid needs root: CI runs as root; elsewhere these
cases skip, unless TANDEM_REQUIRE_POSTGRES=1 (CI's rule), where they fail."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tandem.adapters.tokens import new_token, write_tokens_file
from tests.e2e.serving import tandem

other_uid = 65534  # nobody


def give_away(path: Path) -> None:
    """`path` owned by another user (root only: see the module's docstring)."""
    if os.geteuid() != 0:
        reason = "giving a file to another uid needs root"
        if os.environ.get("TANDEM_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason + " (TANDEM_REQUIRE_POSTGRES=1: CI runs as root)", pytrace=False)
        pytest.skip(reason)
    os.chown(path, other_uid, other_uid)


def serve(tmp_path: Path, *options: str) -> tuple[int, str, str, Path]:
    database = tmp_path / "events.db"
    done = tandem("serve", "--store", f"sqlite:///{database}", *options, "--listen", "127.0.0.1:0", timeout_s=20)
    return done.returncode, done.stdout, done.stderr, database


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.json"
    write_tokens_file(path, {"human": new_token(), "background": new_token()})
    return path


def test_a_tokens_file_of_another_user_is_refused_before_anything_starts(tmp_path: Path) -> None:
    path = tokens_file(tmp_path)
    give_away(path)
    code, stdout, stderr, database = serve(tmp_path, "--tokens", str(path))
    assert code == 1 and stdout == "", (stdout, stderr)
    assert f"tokens file {path}: owned by uid {other_uid}, not this server's user ({os.geteuid()})" in stderr, stderr
    assert not database.exists()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{{"tokens": [{{"actor": "human", "actor": "model", "token": "{token}"}}]}}', "$.tokens[0].actor"),
        ('{{"tokens": [{{"actor": "human", "token": "{token}", "token": "{other}"}}]}}', "$.tokens[0].token"),
        ('{{"tokens": [{{"actor": "model", "token": "{other}"}}], "tokens": [{{"actor": "human", "token": "{token}"}}]}}', "$.tokens"),
        ('{{"tokens": [{{"actor": "human", "token": "{other}"}}, {{"actor": "model", "actor": "background", "token": "{token}"}}]}}', "$.tokens[1].actor"),
    ],
    ids=["actor", "token", "tokens", "second-entry"],
)
def test_a_tokens_file_with_a_repeated_key_is_refused_naming_where(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(text.format(token=new_token(), other=new_token()))
    os.chmod(path, 0o600)
    json.loads(path.read_text())  # valid JSON: only the repeated key is wrong
    code, stdout, stderr, database = serve(tmp_path, "--tokens", str(path))
    assert code == 1 and stdout == "", (stdout, stderr)
    assert f"tokens file {path}: duplicate key" in stderr and f"at `{where}`" in stderr, stderr
    assert not database.exists()


def test_a_github_secret_file_of_another_user_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "github-secret"
    secret.write_text("a webhook secret\n")
    os.chmod(secret, 0o600)
    give_away(secret)
    code, stdout, stderr, database = serve(tmp_path, "--tokens", str(tokens_file(tmp_path)), "--github-secret-file", str(secret))
    assert code == 1 and stdout == "", (stdout, stderr)
    assert f"GitHub secret file {secret}: owned by uid {other_uid}, not this server's user ({os.geteuid()})" in stderr, stderr
    assert not database.exists()


def stores_file(tmp_path: Path, text: str) -> Path:
    tokens_file(tmp_path)
    path = tmp_path / "stores.json"
    path.write_text(text.replace("DB", f"sqlite:///{tmp_path}/events.db"))
    return path


def serve_stores(path: Path) -> tuple[int, str, str]:
    done = tandem("serve", "--stores", str(path), "--listen", "127.0.0.1:0", timeout_s=20)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"stores": [{"name": "a", "name": "b", "store": "DB", "tokens": "tokens.json"}]}', "$.stores[0].name"),
        ('{"stores": [{"name": "a", "store": "memory:", "store": "DB", "tokens": "tokens.json"}]}', "$.stores[0].store"),
        ('{"stores": [], "stores": [{"name": "a", "store": "DB", "tokens": "tokens.json"}]}', "$.stores"),
    ],
    ids=["name", "store", "stores"],
)
def test_a_stores_file_with_a_repeated_key_is_refused_naming_where(tmp_path: Path, text: str, where: str) -> None:
    path = stores_file(tmp_path, text)
    code, stdout, stderr = serve_stores(path)
    assert code == 2 and stdout == "", (stdout, stderr)  # as every other fault of a stores file
    assert f"stores file {path}: duplicate key" in stderr and f"at `{where}`" in stderr, stderr
    assert not (tmp_path / "events.db").exists()


def test_a_stores_file_of_another_user_or_writable_by_others_is_refused(tmp_path: Path) -> None:
    path = stores_file(tmp_path, '{"stores": [{"name": "a", "store": "DB", "tokens": "tokens.json"}]}')
    os.chmod(path, 0o664)
    code, stdout, stderr = serve_stores(path)
    assert code == 2 and stdout == "", (stdout, stderr)
    assert f"stores file {path}: writable by group or others (mode 0664); run: chmod go-w {path}" in stderr, stderr
    os.chmod(path, 0o644)  # readable by others is fine: it names files and stores, no token
    give_away(path)
    code, stdout, stderr = serve_stores(path)
    assert code == 2 and stdout == "", (stdout, stderr)
    assert f"stores file {path}: owned by uid {other_uid}, not this server's user ({os.geteuid()})" in stderr, stderr
    assert not (tmp_path / "events.db").exists()
