"""Installed, Tandem is one import name: `tandem.domain`, `tandem.replay`,
`tandem.adapters`, `tandem.client`, ... (pyproject.toml maps the
repository's folders under it), so an orchestrator that embeds it keeps its
own `domain` or `adapters`.

A non-editable install into a fresh virtualenv, imported from outside the
checkout, serving the lifecycle SVGs (package data from docs/lifecycles); and
no module of the project imports a folder by its bare name."""

from __future__ import annotations

import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("domain", "projections", "adapters", "replay", "client")
install_timeout_s = 300
BARE = re.compile(rf"^\s*(from|import) ({'|'.join(FOLDERS)})(\.|\s|$)", re.M)


def test_no_module_imports_a_folder_by_its_bare_name() -> None:
    sources = [path for folder in (*FOLDERS, "tests", "bench", "docs") for path in (ROOT / folder).rglob("*.py")]
    offenders = [f"{path.relative_to(ROOT)}:{BARE.search(path.read_text()).group(0).strip()}" for path in sources if BARE.search(path.read_text())]  # type: ignore[union-attr]
    assert not offenders, offenders


def test_a_wheel_install_imports_as_tandem_from_anywhere(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=install_timeout_s)
    python = venv / "bin" / "python"
    # Built from a copy: a build in the checkout would leave build/ behind.
    source = tmp_path / "source"
    source.mkdir()
    # docs/lifecycles is the package data tandem.lifecycle_diagrams (its SVGs).
    for part in ("pyproject.toml", "README.md", *FOLDERS, "docs/lifecycles"):
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy2
        copy(ROOT / part, source / part, **({"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / part).is_dir() else {}))
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(source)], capture_output=True, text=True, timeout=install_timeout_s
    )
    assert installed.returncode == 0, installed.stderr
    # The dependencies come from this interpreter's site-packages, as a plain
    # path: its .pth files (the checkout's editable finder) are not run.
    (next((venv / "lib").glob("python*")) / "site-packages" / "dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n"
    )
    code = (
        "import sys, tandem.domain, tandem.replay\n"
        "from tandem.replay import Engine\n"
        "from tandem.adapters.client import Client\n"
        "from tandem.client import AsyncClient, inputs\n"
        "assert inputs.HumanMessage(conversation_id='fg', message_id='m1', text='hi').kind == 'human.message'\n"
        "from tandem.adapters.store import open_store\n"
        f"assert {str(ROOT)!r} not in tandem.domain.__file__, tandem.domain.__file__\n"
        "Engine(open_store('memory:'))\n"
        "from importlib.resources import files\n"
        "from tandem.adapters.diagrams import LIFECYCLE_NAMES, lifecycle_svg\n"
        f"assert {str(ROOT)!r} not in str(files('tandem.lifecycle_diagrams')), files('tandem.lifecycle_diagrams')\n"
        "assert all(lifecycle_svg(name).startswith(b'<?xml') for name in LIFECYCLE_NAMES)\n"
        "drawn = sorted(p.name for p in files('tandem.lifecycle_diagrams').iterdir() if p.name.endswith(('.svg', '.dot')))\n"
        "assert drawn == sorted(f'{name}.svg' for name in LIFECYCLE_NAMES), drawn\n"
        "for bare in ('domain', 'adapters', 'replay', 'projections', 'client'):\n"
        "    try:\n"
        "        __import__(bare)\n"
        "    except ModuleNotFoundError:\n"
        "        continue\n"
        "    raise SystemExit(f'{bare} is importable at the top level')\n"
        "print('ok')\n"
    )
    result = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    command = subprocess.run([str(venv / "bin" / "tandem"), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert command.returncode == 0 and command.stdout.startswith("usage: tandem"), command.stderr
