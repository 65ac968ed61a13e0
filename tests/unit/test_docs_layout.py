"""The documents are laid out to be read (issue 24, "a repository that explains
itself"): a short README that opens on the two commands and points on; the
contract as docs/contract/, its rules shared by every kind in README.md and one
file per area of domain/; no pointer left to the two pages it replaced; every
old section number that code, tests and fixtures still cite resolved by the
contract's table of them; and every relative link of README.md and docs/
landing on a file, and on a heading when it names one.
"""

from __future__ import annotations

import re
from pathlib import Path

from tandem.domain.areas import AREAS  # docs/contract/ has a file of each area's name

from tests.unit.test_docs_self_contained import NOT_OURS, TEXT_SUFFIXES, _anchors

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONTRACT = ROOT / "docs" / "contract"
README_LINES_MAX = 250
OLD_PAGES = ("contract.md", "contract-v1.2.md")
# A fixture trace's comment lines are bytes of the trace: its SourceProgressed
# digest (fixtures/event-digests.json) pins them, so its old citation stays,
# resolved by the contract's table of old section numbers (tested below).
PINNED_CITATIONS = {"fixtures/gates/39_no_inherited_tools_forbidden_tool_denied_before_execution.jsonl"}
CITATION = re.compile(r"contract(?:-v1\.2\.md| v1\.2)? sections? (\d+(?:\.\d+)?)|contract-v1\.2\.md §(\d+(?:\.\d+)?)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _markdown_pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _text_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if NOT_OURS.intersection(relative.parts) or any(part.endswith(".egg-info") for part in relative.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            found.append(path)
    return sorted(found)


def _links(page: Path) -> list[str]:
    """The link targets of a page, outside fenced code blocks."""
    links: list[str] = []
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            links.extend(LINK.findall(re.sub(r"`[^`]*`", "", line)))
    return links


def broken_links(page: Path) -> list[str]:
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue
        file, _, fragment = link.partition("#")
        target = (page.parent / file).resolve() if file else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in _anchors(target):
            broken.append(f"{link}: no such heading")
    return broken


def test_the_readme_is_short_and_opens_on_the_two_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES_MAX, f"README.md has {len(lines)} lines, at most {README_LINES_MAX}"
    commands = [line for line in lines[:20] if line.startswith("python3 -m venv .venv")]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/tandem demo",
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q",
    ]


def test_the_contract_has_one_file_per_area_and_its_readme_links_each() -> None:
    files = {path.stem for path in CONTRACT.glob("*.md")}
    assert {"README", *AREAS} <= files, sorted({"README", *AREAS} - files)
    linked = {Path(link.partition("#")[0]).stem for link in _links(CONTRACT / "README.md") if "/" not in link}
    assert files - {"README"} <= linked, f"docs/contract/README.md links no {sorted(files - {'README'} - linked)}"


def test_no_file_points_to_the_two_pages_the_contract_replaced() -> None:
    pointers = [f"docs/{page}" for page in OLD_PAGES] + [f"]({prefix}{page}" for page in OLD_PAGES for prefix in ("", "../", "docs/")]
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in _text_files()
        if path != Path(__file__).resolve() and path.relative_to(ROOT).as_posix() not in PINNED_CITATIONS
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if any(pointer in line for pointer in pointers)
    ]
    assert not offenders, "points to a page the contract no longer has:\n" + "\n".join(offenders)
    for pinned in PINNED_CITATIONS:
        assert (ROOT / pinned).exists(), f"{pinned}: gone, take it out of PINNED_CITATIONS"


def _old_numbers() -> dict[str, set[str]]:
    """The contract's table of old section numbers: version -> the numbers it resolves."""
    text = (CONTRACT / "README.md").read_text(encoding="utf-8").split("## Where the old section numbers went", 1)[1]
    v1, v12 = text.split("\nContract v1.2", 1)
    numbers = {}
    for version, part in (("v1", v1), ("v1.2", v12)):
        numbers[version] = set(re.findall(r"^\| ([\d.]+|Appendix A) \|", part, re.M))
    return numbers


def test_every_old_section_number_still_cited_is_resolved() -> None:
    numbers = _old_numbers()
    assert {"1", "3.3", "10", "Appendix A"} <= numbers["v1"] and {"0", "1.7", "8.1", "14"} <= numbers["v1.2"], numbers
    unresolved = []
    cited_at_all = 0
    for path in _text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for match in CITATION.finditer(line):
                cited_at_all += 1
                version = "v1.2" if "v1.2" in match.group(0) else "v1"
                cited = match.group(1) or match.group(2)
                if cited not in numbers[version]:
                    unresolved.append(f"{path.relative_to(ROOT)}:{number}: contract {version} section {cited}")
    assert cited_at_all > 100, "the citations were not read"
    assert not unresolved, "cited, but not in docs/contract/README.md's old numbers:\n" + "\n".join(unresolved)


def test_every_relative_link_of_the_readme_and_the_docs_lands() -> None:
    assert sum(len(_links(page)) for page in _markdown_pages()) > 500, "the links were not read"
    broken = [f"{page.relative_to(ROOT)}: {problem}" for page in _markdown_pages() for problem in broken_links(page)]
    assert not broken, "links that land nowhere:\n" + "\n".join(broken)


def test_the_link_check_finds_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading\n\n## `tool.request` (v1.2)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-heading) [ok](there.md#toolrequest-v12) [ok](#mine) ![no](gone.png)\n"
        "[no](there.md#nothing) [no](nowhere.md) [web](https://example.org/x.md) `[code](gone.md)`\n"
        "```\n[in a block](gone.md)\n```\n## Mine\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["gone.png: no such file", "there.md#nothing: no such heading", "nowhere.md: no such file"]
