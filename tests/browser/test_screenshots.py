"""The screenshot command (tests/browser/screenshots.py, which writes
docs/console/): every PNG it promises is written, is a PNG 1280 px wide and at
most HEIGHT_MAX high, and no page it shot reported a console error, page
error or CSP violation (the harness's Watch; the command exits 1 on one).
The pixels are not compared."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from tests.browser import screenshots
from tests.browser.harness import VIEWPORT

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, by the spec)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, path
    length, kind = struct.unpack(">I4s", head[8:16])
    assert (length, kind) == (13, b"IHDR"), path
    return struct.unpack(">II", head[16:24])


def test_every_page_is_written_as_a_png_without_a_console_error(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "console"
    done = screenshots.main(["--out", str(out)], browser=browser)
    printed = capsys.readouterr()
    assert done == 0, printed.err
    assert printed.err == ""
    expected = [out / name for name in screenshots.FILES]
    assert printed.out.splitlines() == [str(path) for path in expected]
    assert sorted(p.name for p in out.iterdir()) == sorted(screenshots.FILES)
    assert {"overview.png", "task.png", "questions-open.png", "timeline.png", "explain.png", "past.png", "login.png"} <= set(screenshots.FILES)
    for path in expected:
        width, height = png_size(path)
        assert width == VIEWPORT["width"], path
        assert VIEWPORT["height"] <= height <= screenshots.HEIGHT_MAX, (path, height)


def test_help_names_the_command_and_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        screenshots.main(["--help"])
    assert exit.value.code == 0
    shown = capsys.readouterr().out
    assert "--out DIR" in shown and "questions-open.png" in shown
