"""docs/api.md shows a real session: the one docs/examples/api-session.sh
prints (tokens, wall-clock times and the port aside)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "api-session.sh"
DOC = ROOT / "docs" / "api.md"
session_timeout_s = 120
example_day = "2026-03-01"  # the bundled example's times stay as they are


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def normalised(text: str) -> str:
    text = re.sub(r"(Bearer |human token: )[A-Za-z0-9_-]{43}", r"\1TOKEN", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", lambda m: m.group() if m.group().startswith(example_day) else "NOW", text)
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text).strip()


def documented_session() -> str:
    text = DOC.read_text()
    start = text.index("```console\n$ tandem demo --serve") + len("```console\n")
    return text[start : text.index("\n```", start)]


def test_the_documented_curl_session_is_what_the_service_prints(tmp_path: Path) -> None:
    for tool in ("curl", "jq", "bash"):
        assert shutil.which(tool), f"{tool} is needed to run the documented session (.ci/run installs it)"
    environment = {**os.environ, "PORT": str(_free_port()), "TANDEM": str(Path(sys.executable).parent / "tandem"), "TMPDIR": str(tmp_path)}
    result = subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=session_timeout_s
    )
    assert result.returncode == 0, result.stderr
    assert normalised(result.stdout) == normalised(documented_session())
