"""Display cells of printable text (adapters/terminal.py): `cells` measures,
`pad` pads and `cut` cuts in the cells a terminal lays text out in — a wide
character or an emoji takes two, a combining mark none — and a cut never
splits a grapheme cluster (a wide character, a base and its marks, an emoji
ZWJ sequence)."""

from __future__ import annotations

import pytest
import wcwidth
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.adapters.terminal import cells, cut, detached, pad, printable, printable_lines

E_ACUTE = "e\u0301"  # é as e + COMBINING ACUTE ACCENT
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl: one emoji
FLAG = "\U0001f1eb\U0001f1f7"  # regional indicators F R
THUMB = "\U0001f44d\U0001f3fd"  # thumbs up, medium skin tone


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("", 0),
        ("abc", 3),
        ("漢字", 4),
        ("🙂", 2),
        (E_ACUTE, 1),
        (f"caf{E_ACUTE}", 4),
        (FAMILY, 2),
        (FLAG, 2),
        (THUMB, 2),
        ("a漢🙂" + E_ACUTE, 6),
        ("…", 1),
    ],
)
def test_cells_counts_display_cells(text: str, width: int) -> None:
    assert cells(text) == width


def test_escapes_count_as_the_characters_they_are_written_with() -> None:
    shown = printable("\x1b[2J\u202eevil\u009b")
    assert shown == "\\x1b[2J\\u202eevil\\x9b"
    assert cells(shown) == len(shown) == 21


def test_cells_refuses_text_that_is_not_printable() -> None:
    for raw in ("\x1b", "tab\there", "漢\x07"):
        with pytest.raises(AssertionError):
            cells(raw)
        assert cells(printable(raw)) >= 0


@pytest.mark.parametrize(
    ("text", "width", "padded"),
    [
        ("ab", 4, "ab  "),
        ("漢字", 6, "漢字  "),
        ("🙂", 3, "🙂 "),
        (E_ACUTE, 3, E_ACUTE + "  "),
        (FAMILY, 4, FAMILY + "  "),
        ("abcdef", 3, "abcdef"),  # wider than asked: as is
    ],
)
def test_pad_fills_to_the_width_in_cells(text: str, width: int, padded: str) -> None:
    assert pad(text, width) == padded
    assert cells(pad(text, width)) == max(width, cells(text))


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        ("abcdef", 6, "abcdef"),  # fits: unchanged
        ("abcdef", 4, "abc…"),
        ("abcdef", 1, "…"),
        ("漢字漢字", 8, "漢字漢字"),
        ("漢字漢字", 7, "漢字漢…"),
        ("漢字漢字", 6, "漢字…"),  # 漢 would need cells 5-6 and the … cell 7: not half of it
        ("a🙂b", 3, "a…"),
        ("a🙂b", 4, "a🙂b"),
        (f"caf{E_ACUTE}s", 5, f"caf{E_ACUTE}s"),
        (f"caf{E_ACUTE}s!", 5, f"caf{E_ACUTE}…"),  # the accent stays with its e
        (f"cafe{E_ACUTE[1]}s!", 4, "caf…"),  # and never goes without it
        (f"ab{FAMILY}cd", 6, f"ab{FAMILY}cd"),
        (f"ab{FAMILY}cd", 5, f"ab{FAMILY}…"),
        (f"ab{FAMILY}cd", 4, "ab…"),  # before the family, never inside it (a man alone)
        (f"ab{FLAG}cd", 4, "ab…"),
        (f"ab{THUMB}", 4, f"ab{THUMB}"),
        (f"ab{THUMB}c", 4, "ab…"),
    ],
)
def test_cut_ends_in_an_ellipsis_between_grapheme_clusters(text: str, width: int, shown: str) -> None:
    assert cut(text, width) == shown
    assert cells(cut(text, width)) <= width


def test_cut_keeps_escapes_visible() -> None:
    shown = printable("\u202eabc\x1b[2J")
    assert cut(shown, 60) == shown  # fits
    assert cut(shown, 8) == "\\u202ea…"


def test_a_mark_that_would_join_the_column_gap_is_escaped() -> None:
    sign = "\u093e"  # DEVANAGARI VOWEL SIGN AA: a spacing mark, no cell alone, one after a space
    assert cells(sign) == 0 and cells(" " + sign) == 2
    assert detached(sign + "x") == "\\u093ex"
    assert detached("\U00011145x") == "\\U00011145x"
    for kept in ("abc", "漢字", "\u0915" + sign, E_ACUTE, "\u0301x", FAMILY, ""):
        assert detached(kept) == kept  # a nonspacing mark joins the gap's space without moving anything


def test_printable_lines_keeps_the_newlines_only() -> None:
    assert printable_lines("a\x1b\nb\u202e\n") == "a\\x1b\nb\\u202e\n"


# Text as inputs write it: letters, CJK, emoji (with skin tones and ZWJ), marks, controls, bidi.
ALPHABET = list("ab ,漢字") + ["🙂", "\u0301", "\u093e", "\u094d", "\u0915", "\u1100", "\u1161", "\U0001f1eb", "\U0001f1f7", "\u200d", "\U0001f468", "\U0001f3fd", "\ufe0f", "\x1b", "\u202e", "\u009b", "\n"]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join), st.integers(1, 40))
def test_cut_and_pad_keep_their_promises_on_any_text(raw: str, width: int) -> None:
    text = printable(raw)
    assert cells(text) == sum(wcwidth.wcswidth(cluster) for cluster in wcwidth.iter_graphemes(text))
    shown = cut(text, width)
    assert cells(shown) <= width
    assert shown == text if cells(text) <= width else (shown.endswith("…") and text.startswith(shown[:-1]))
    assert cells(pad(shown, width)) == width
    # Cells add up across a table's column gap, so columns line up.
    cell = detached(shown)
    column = cells(cell) + 3
    assert cells(f"{cell}  {pad(cell, column)}  {cell}") == 3 * cells(cell) + 3 + 4
