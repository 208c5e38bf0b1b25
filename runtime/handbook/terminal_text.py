"""Text others wrote, made safe to put on a terminal or in a log a person reads there.

Agents write the inbox's records; a record can also predate the checks that now refuse
control characters (`inbox_records`). Printed raw, an escape sequence can hide a line,
clear the screen, retitle the window or (OSC 52) set the clipboard, and a bidirectional
override can show text in another order than it is stored. So every display of such
text goes through `for_terminal` (plain text) or `json_for_terminal` (JSON), which show
each of these characters as an escape (``\\x1b``, ``\\u202e``) instead of acting on it.
"""

from __future__ import annotations

import json
import re
from typing import Any

CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""Control characters (C0, DEL and C1) except tab and newline, as a regex class body:
what a record may not hold, and what is escaped wherever stored text is shown."""
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
"""The bidirectional embeddings, overrides and isolates (the "Trojan Source" set)."""
_UNSAFE = re.compile(f"[{CONTROLS}{BIDI_CONTROLS}]")


def for_terminal(text: str) -> str:
    """`text` with every control character but tab and newline, and every bidirectional
    control, written as a visible escape: ESC is shown as ``\\x1b``, U+202E as ``\\u202e``."""
    return _UNSAFE.sub(_escaped, text)


def json_for_terminal(value: Any, **options: Any) -> str:
    """`value` as JSON (`json.dumps` with `ensure_ascii=False`, so letters stay readable,
    and `options`) with the C1 controls, DEL and the bidirectional controls, which JSON
    may hold raw, written as ``\\u`` escapes too: the same value, safe to print."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
