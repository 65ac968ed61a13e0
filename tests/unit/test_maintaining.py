"""docs/maintaining.md names real files: every repository path it gives in
backticks exists, and every test it names (`FILE::test_name`) is defined in
that file, and every table or constant it names (`DECIDERS`, `KEYS`, ...)
is still in the code, so the checklists cannot drift from it unseen.

A backticked token is a path when it is made of path characters only
(letters, digits, `_`, `-`, `.`, `/`, `*`) and holds a `/` or ends in `.py`,
`.md`, `.json` or `.jsonl`; a route (`/v1/...`, it starts with `/`), a URL
and a command (it has a space) are not. A `*` is a glob that must match
something. The placeholders `NN`, `NAME` and `AREA` (the page says so) stand
for a file still to be written: of such a path, only the folder before the
first placeholder must exist. Code blocks are commands, not read.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "maintaining.md"
PATH_CHARACTERS = re.compile(r"[A-Za-z0-9_.*/-]+")
PATH_SUFFIXES = (".py", ".md", ".json", ".jsonl")
PLACEHOLDER = re.compile(r"(?<![A-Za-z])(?:NN|NAME|AREA)(?![A-Za-z])")
CONSTANT = re.compile(r"_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
CODE_FOLDERS = ("domain", "projections", "replay", "adapters", "client", "tests")


def code_spans(text: str) -> list[str]:
    """The inline code of `text`, outside fenced code blocks."""
    spans: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            spans.extend(re.findall(r"`([^`]+)`", line))
    return spans


def named_paths(text: str) -> list[str]:
    """The tokens that name a repository path (`FILE::test` included), each once."""
    found: list[str] = []
    for span in code_spans(text):
        path = span.split("::", 1)[0]
        if not PATH_CHARACTERS.fullmatch(path) or path.startswith("/"):
            continue
        if "/" in path or path.endswith(PATH_SUFFIXES):
            found.append(span)
    return list(dict.fromkeys(found))


def _defines(path: Path, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", path.read_text(), re.M) is not None


def problem(token: str) -> str | None:
    """Why `token` names nothing in the repository, or None."""
    path, _, test = token.partition("::")
    if ".." in path.split("/"):
        return f"{token}: leaves the repository"
    placeholder = PLACEHOLDER.search(path)
    if placeholder is not None:
        folder = path[: placeholder.start()].rpartition("/")[0]
        return None if (ROOT / folder).is_dir() else f"{token}: no folder {folder}/"
    if "*" in path:
        return None if any(ROOT.glob(path)) else f"{token}: the glob matches nothing"
    target = ROOT / path
    if not target.exists():
        return f"{token}: no such file or folder"
    if test and not (target.is_file() and _defines(target, test)):
        return f"{token}: {path} defines no {test}"
    return None


def problems(text: str) -> list[str]:
    return [found for token in named_paths(text) if (found := problem(token)) is not None]


def test_every_path_the_checklists_name_exists() -> None:
    missing = problems(PAGE.read_text(encoding="utf-8"))
    assert not missing, "docs/maintaining.md names paths that are not in the repository:\n" + "\n".join(missing)


def test_every_constant_the_checklists_name_is_in_the_code() -> None:
    """A table renamed or gone (`HUNT_IDS`, `PASS_SCRATCH`) is a step that
    points nowhere. Placeholders are not constants."""
    this = Path(__file__).resolve()
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in CODE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != this and "__pycache__" not in path.parts
    )
    named = {span for span in code_spans(PAGE.read_text(encoding="utf-8")) if CONSTANT.fullmatch(span)}
    gone = sorted(name for name in named - {"NN", "NAME", "AREA"} if not re.search(rf"\b{name}\b", code))
    assert len(named) > 20, named
    assert not gone, f"docs/maintaining.md names constants the code does not have: {gone}"


def test_the_checklists_name_many_paths() -> None:
    """The parser finds the paths (a page it read wrongly would pass the test above)."""
    tokens = named_paths(PAGE.read_text(encoding="utf-8"))
    assert len(tokens) > 50, tokens
    assert "domain/rules.py" in tokens and "tests/unit/test_maintaining.py" in tokens


def test_every_link_of_the_page_lands_on_a_file() -> None:
    text = PAGE.read_text(encoding="utf-8")
    broken = [
        link
        for link in re.findall(r"\]\(([^)\s]+)\)", text)
        if not link.startswith(("http://", "https://", "#")) and not (PAGE.parent / link.partition("#")[0]).exists()
    ]
    assert not broken, f"docs/maintaining.md: links that land nowhere: {broken}"


def test_the_check_reports_what_is_not_there() -> None:
    text = "\n".join(
        [
            "`domain/rules.py` `domain/nope.py` `docs/nowhere.md` `README.md` `NOPE.md`",
            "`domain/*/events.py` `domain/*_nothing.py`",
            "`fixtures/gates/NN_name.jsonl` `nowhere/NAME.py` `domain/AREA.py`",
            "`tests/unit/test_layout.py::test_no_file_over_the_limit` `tests/unit/test_layout.py::test_nothing`",
            "`/v1/health` `GET /v1/views/{name}` `python -m x --write` `https://example.org/a.md` `ev.Decision`",
            "```sh",
            "`domain/in_a_code_block.py`",
            "```",
        ]
    )
    assert problems(text) == [
        "domain/nope.py: no such file or folder",
        "docs/nowhere.md: no such file or folder",
        "NOPE.md: no such file or folder",
        "domain/*_nothing.py: the glob matches nothing",
        "nowhere/NAME.py: no folder nowhere/",
        "tests/unit/test_layout.py::test_nothing: tests/unit/test_layout.py defines no test_nothing",
    ]
