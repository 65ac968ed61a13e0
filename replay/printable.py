"""Text from inputs, escaped to be shown, never obeyed (docs/contract/views.md,
"Text on a terminal"): C0 controls (newline and tab too: a log
line is one line), DEL, C1 controls, the bidirectional overrides and
isolates (U+202A–U+202E, U+2066–U+2069), and lone surrogates (a file name's
bytes that are not UTF-8), written as `\\x1b`, `\\u202e`, `\\udcff`; a backslash
stays as it is. Here, below the adapters, so that explain's text
(replay/explain/render.py) is safe by default; adapters/terminal.py adds
display widths.
"""

from __future__ import annotations

import re

_BIDI = "\u202a-\u202e\u2066-\u2069"
_SURROGATES = "\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character and bidi override escaped."""
    return _UNSAFE.sub(_escape, text)
