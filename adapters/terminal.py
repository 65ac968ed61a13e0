"""Text from inputs is data: on a terminal or in a log line it is shown, never
obeyed (docs/contract/views.md, "Text on a terminal").

`printable` (replay/printable.py, so that explain's text is safe too) escapes what a terminal would act on or that would hide what
follows: C0 controls (newline and tab too: a log line is one line), DEL, C1
controls, the bidirectional overrides and isolates (U+202A–U+202E,
U+2066–U+2069), and lone surrogates (a file name's bytes that are not UTF-8;
a strict stream would refuse to write them), written as `\\x1b`, `\\u202e`,
`\\udcff`; a backslash stays as it is.

`cells`, `pad`, `cut` and `fold` measure, pad, cut and fold printable text in
display cells (see below), so that columns line up on a terminal;
`terminal_width` is the width a table fits in.
"""

from __future__ import annotations

import shutil

import wcwidth
from wcwidth.table_zero import ZERO_WIDTH

from tandem.replay.printable import printable  # noqa: F401 (the adapters' name for it)

def printable_lines(text: str) -> str:
    """`text` escaped line by line: its newlines kept (a traceback, a report),
    every other control character and bidi override escaped."""
    return "\n".join(printable(line) for line in text.split("\n"))


# ------------------------------------------------------------ display cells
#
# A terminal lays text out in cells: most characters take one, East Asian
# wide characters and emoji take two (an emoji ZWJ sequence, a flag or a
# skin-toned emoji is one emoji), combining marks and other zero-width
# characters none. Text is measured one grapheme cluster (UAX #29, as
# wcwidth.iter_graphemes splits it) at a time, each by wcwidth.wcswidth, so
# that what follows a cluster never changes its width (wcswidth of a whole
# string lets a stray ZWJ swallow the space after it, a cell's padding) and
# a cut falls only between clusters: never inside a wide character, never
# between a base and its combining marks, never inside an emoji ZWJ sequence
# (the family 👨‍👩‍👧 is one cluster: a cut falls before it, never after the
# man). Only a character in `_CONTEXTUAL` (the zero-width ones, regional
# indicators, skin tones) measures otherwise beside its neighbours: text
# without one is measured whole by wcswidth, in C, and text with one word by
# word. `detached` keeps a cell's measure the same after a table's column gap.

ellipsis = "…"  # one cell
_CONTEXTUAL = frozenset(
    chr(code)
    for low, high in (*ZERO_WIDTH[wcwidth.list_versions()[-1]], (0x1F1E6, 0x1F1FF), (0x1F3FB, 0x1F3FF))
    for code in range(low, high + 1)
)


def _cluster_cells(cluster: str) -> int:
    width = wcwidth.wcswidth(cluster)
    assert width >= 0, f"not printable text: {cluster!r} (escape it with printable first)"
    return width


def cells(text: str) -> int:
    """The display cells of `text`, already `printable` (no control characters)."""
    if text.isascii():
        assert text.isprintable() or not text, f"not printable text: {text!r}"
        return len(text)
    if _CONTEXTUAL.isdisjoint(text):
        return _cluster_cells(text)
    # Words apart (a word that starts with a contextual character with the
    # space it joins), each in C if it can be.
    words = text.split(" ")
    return len(words) - 1 + sum(_word_cells(word, after_space=number > 0) for number, word in enumerate(words))


def _word_cells(word: str, after_space: bool) -> int:
    if _CONTEXTUAL.isdisjoint(word):
        return _cluster_cells(word)
    if after_space and word[0] in _CONTEXTUAL:  # it joins the space before it
        return sum(map(_cluster_cells, wcwidth.iter_graphemes(" " + word))) - 1
    return sum(map(_cluster_cells, wcwidth.iter_graphemes(word)))


def detached(text: str) -> str:
    """`text`, its first character escaped if that joins what is printed
    before it (a spacing mark such as U+093E takes no cell alone and one
    after a table's column gap): shown as `\\u093e`, so a cell measures the
    same wherever it is printed."""
    if not text or text[0] not in _CONTEXTUAL or cells(" " + text) == 1 + cells(text):
        return text
    code = ord(text[0])
    return (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}") + text[1:]


def pad(text: str, width: int) -> str:
    """`text` padded with spaces on the right to `width` cells (as is if wider)."""
    return text + " " * (width - cells(text))


def cut(text: str, width: int) -> str:
    """`text` as is if it fits in `width` cells, else as many of its first
    grapheme clusters as fit with `…` in `width` cells, and `…`."""
    assert width >= 1, "room for the ellipsis at least"
    if text.isascii():
        return text if len(text) <= width else text[: width - 1] + ellipsis
    if cells(text) <= width:
        return text
    kept: list[str] = []
    room = width - 1
    for cluster in wcwidth.iter_graphemes(text):
        room -= _cluster_cells(cluster)
        if room < 0:
            break
        kept.append(cluster)
    while kept and cells("".join(kept) + ellipsis) > width:  # a cluster may measure otherwise beside the others
        kept.pop()
    return "".join(kept) + ellipsis


def fold(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width` cells each, in order, split only
    between grapheme clusters, after a space when one is in a piece's second
    half: joined they are `text`, nothing cut (a cluster wider than `width`
    is a piece alone). How a table shows a value it may not cut (an
    identifier) in a column narrower than it."""
    assert width >= 1, "a piece takes a cell at least"
    if cells(text) <= width:
        return [text]
    pieces: list[str] = []
    piece: list[str] = []
    for cluster in wcwidth.iter_graphemes(text):
        if piece and cells("".join(piece) + cluster) > width:
            space = max((n for n, kept in enumerate(piece) if kept == " "), default=0)
            split = space + 1 if space >= len(piece) // 2 else len(piece)
            pieces.append("".join(piece[:split]))
            piece = piece[split:]
        piece.append(cluster)
    pieces.append("".join(piece))
    return pieces


def terminal_width(default: int = 100) -> int:
    """The cells a line of a table may take: `COLUMNS` if set (a positive
    number), else the terminal's width when stdout is one, else `default`."""
    return shutil.get_terminal_size((default, 24)).columns
