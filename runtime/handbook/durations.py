"""Durations as a configuration writes them: a whole number of days or hours, `90d` or
`12h`. One grammar for every setting that takes one (a bundle's `expires`, the review
`horizon`, the build's `--expires`), so no two of them can disagree about what a
duration is. It lives at the runtime's base so that the build side and the runtime
read it alike."""

from __future__ import annotations

import re

PATTERN = r"[1-9][0-9]{0,5}[dh]"
"""The grammar, for a larger pattern to embed: 1 to 999999, then `d` (days) or `h`
(hours)."""
_PARTS = re.compile(r"([1-9][0-9]{0,5})([dh])")
_UNIT_SECONDS = {"d": 86_400, "h": 3_600}


def seconds(text: str) -> int:
    """The seconds `text` stands for. A ValueError names what was given and shows what a
    duration looks like."""
    match = _PARTS.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration like 90d or 12h (a whole number of days or hours)"
        )
    return int(match[1]) * _UNIT_SECONDS[match[2]]
