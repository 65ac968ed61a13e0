"""The docs stand on their own: a clone of this repository is all a user has.

README.md and docs/ never point outside the repository (the contract is
docs/contract/, the HTTP API docs/api.md, the design docs/design.md; the RFC
is cited by name and section), nor does any other file of it (code, tests,
fixtures, scripts), and the links of the contract's pages and the API page land
on a heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
OUTSIDE = ("../shared/", "shared/spec", "shared/seeds", "DESIGN.md")
# Every other file of the repository that is text, wherever it is (not what
# pip, git or a test run put there).
TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".jsonl", ".html", ".js", ".css", ".txt", ".sh", ".cfg", ".ini", ".yml"}
NOT_OURS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "node_modules", "build", "dist"}


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_no_pointer_leaves_the_repository(path: Path) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(pointer in line for pointer in OUTSIDE)
    ]
    assert not offenders, "points outside the repository:\n" + "\n".join(offenders)


def _repository_text_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if NOT_OURS.intersection(relative.parts) or any(part.endswith(".egg-info") for part in relative.parts):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.parent.name == ".ci") and path not in DOCS:
            found.append(path)
    return sorted(found)


def test_no_file_of_the_repository_points_outside_it() -> None:
    this = Path(__file__).resolve()
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in _repository_text_files()
        if path != this
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if any(pointer in line for pointer in OUTSIDE)
    ]
    assert not offenders, "points outside the repository:\n" + "\n".join(offenders)


def _anchors(path: Path) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to
    hyphens, `-1`, `-2`… for a repeat; headings inside code blocks do not count."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"#{1,6} (.+)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


PAGES = [*sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs" / "contract").glob("*.md")), "api.md"]


@pytest.mark.parametrize("name", PAGES)
def test_the_links_of_the_contract_and_the_api_land(name: str) -> None:
    page = ROOT / "docs" / name
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if link.startswith(("http://", "https://")):
            continue
        file, _, fragment = link.partition("#")
        target = (page.parent / file).resolve() if file else page
        if not target.exists() or (fragment and fragment not in _anchors(target)):
            broken.append(link)
    assert not broken, f"docs/{name}: links that land nowhere: {broken}"
