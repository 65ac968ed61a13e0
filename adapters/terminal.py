"""Text from inputs is data: on a terminal or in a log line it is shown, never
obeyed (docs/contract.md section 10, "Text on a terminal").

`printable` escapes what a terminal would act on or that would hide what
follows: C0 controls (newline and tab too: a log line is one line), DEL, C1
controls, the bidirectional overrides and isolates (U+202A–U+202E,
U+2066–U+2069), and lone surrogates (a file name's bytes that are not UTF-8;
a strict stream would refuse to write them), written as `\\x1b`, `\\u202e`,
`\\udcff`; a backslash stays as it is.
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
