"""Ids close to one no doc has, found from the sorted ids alone (catalog-offsets.bin holds
them), never by parsing the catalog or comparing the id with every other.

The ids are squeezed into one byte string, a line each: lowercased, with ASCII
punctuation, spaces and control characters dropped (`AC-200`, `ac 200` and `AC200` are
all `ac200`). A wanted id, squeezed the same way and cut to `MAX_WANTED` characters, is
then looked up with substring searches, which run in C:

- **same** ids, squeezed (case, punctuation);
- **close** ids: those that start with the longest start of the wanted id any id starts
  with, and those that end with the longest end any id ends with (a typo leaves one of
  the two long; a missing or extra prefix or suffix leaves one whole), at most
  `CANDIDATES` of each, ranked by difflib's ratio as `get_close_matches` ranks them;
- **containing**: ids that hold the whole wanted id (a prefix or suffix left out), and
  of the close candidates those the wanted id holds (one added).

Work is bounded whatever the wanted id: a cut length, a dozen searches of the ids'
bytes for each anchor, and at most twice `CANDIDATES` ratios.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate

MAX_WANTED = 200
"""Characters of a wanted id looked at (after stripping): a 10,000-character id costs as
much as a 200-character one."""
CANDIDATES = 25
"""Ids ranked by difflib from each anchor (start, end)."""
POOL = 400
"""Ids looked at for each anchor length, the closest in length kept."""
SLACK = 2
CLOSE, LIMIT, CUTOFF = 5, 10, 0.5
MIN_ANCHOR = 3
"""Shortest shared start or end that makes an id a candidate."""
_DROP = bytes(b for b in range(128) if not chr(b).isalnum() and b != 0x0A)


def squeeze(text: str) -> bytes:
    """`text` lowercased (ASCII), UTF-8, without ASCII punctuation, spaces or controls."""
    return text.encode("utf-8", "replace").lower().translate(None, _DROP)


class IdIndex:
    """The squeezed ids of one bundle, a line each, and where each line starts."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids
        joined = "\n".join(ids)
        if joined.count("\n") != max(0, len(ids) - 1):  # an id holding a line break
            joined = "\n".join(i.replace("\n", " ") for i in ids)
        self.text = b"\n" + squeeze(joined) + b"\n"
        lines = self.text[1:-1].split(b"\n") if ids else []
        self.starts = list(accumulate((len(line) + 1 for line in lines), initial=1))
        """Where line n (id n) starts in `text`."""

    def suggest(self, wanted: str) -> list[str]:
        """Ids close to `wanted`, the same ones first, then the closest, then those that
        hold it; at most `LIMIT`."""
        lowered = wanted.strip()[:MAX_WANTED].lower()
        key = squeeze(lowered).replace(b"\n", b"")
        if not key or not self.ids:
            return []
        same = [self.ids[n] for n in self._find(b"\n" + key + b"\n", 1)]
        containing = [self.ids[n] for n in self._find(key, 0, LIMIT)]
        candidates = dict.fromkeys(self._anchored(key, start=True))
        candidates.update(dict.fromkeys(self._anchored(key, start=False)))
        close = _closest(lowered, [self.ids[n] for n in candidates])
        held = [self.ids[n] for n in candidates if self._line(n) in key]  # an extra part
        return list(dict.fromkeys([*same, *close, *containing, *held]))[:LIMIT]

    def _line(self, n: int) -> bytes:
        return self.text[self.starts[n] : self.starts[n + 1] - 1]

    def _anchored(self, key: bytes, start: bool) -> list[int]:
        """Ids that start (or end) like `key`: those sharing the longest start (end) of it
        any id has, or up to `SLACK` characters less (`pressurev2` shares one more with
        `pressure-valve` than with `pressure`), the closest in length first."""
        low, high = 0, len(key)  # the longest shared length lies in [low, high]
        while low < high:
            mid = (low + high + 1) // 2
            if self._part(key, mid, start) in self.text:
                low = mid
            else:
                high = mid - 1
        shortest = min(MIN_ANCHOR, len(key))
        if low < shortest:
            return []
        found: dict[int, None] = {}
        for length in range(low, max(shortest, low - SLACK) - 1, -1):
            needle = self._part(key, length, start)
            found.update(dict.fromkeys(self._find(needle, 1 if start else 0, POOL)))
        starts = self.starts
        by_length = sorted(found, key=lambda n: abs(starts[n + 1] - starts[n] - 1 - len(key)))
        return by_length[:CANDIDATES]

    @staticmethod
    def _part(key: bytes, length: int, start: bool) -> bytes:
        return b"\n" + key[:length] if start else key[len(key) - length :] + b"\n"

    def _find(self, needle: bytes, anchor: int, limit: int = LIMIT) -> Iterator[int]:
        """The lines (ids) `needle` occurs in, in order, at most `limit` of them; `anchor`
        is 1 for a needle that starts with the newline before its line, else 0."""
        at, found, last = 0, 0, -1
        while found < limit:
            at = self.text.find(needle, at)
            if at < 0:
                return
            line = bisect_right(self.starts, at + anchor) - 1
            at += 1
            if line != last and 0 <= line < len(self.ids):
                found, last = found + 1, line
                yield line


def _closest(wanted: str, candidates: Sequence[str]) -> list[str]:
    """The `CLOSE` candidates most like `wanted` by difflib's ratio (at least `CUTOFF`),
    best first, with get_close_matches' cheap upper bounds tried first."""
    if not candidates:
        return []
    from difflib import SequenceMatcher  # imported on the first miss, not at every start

    matcher = SequenceMatcher()
    matcher.set_seq2(wanted)
    scored = []
    for n, candidate in enumerate(candidates):
        matcher.set_seq1(candidate.lower())
        if (
            matcher.real_quick_ratio() >= CUTOFF
            and matcher.quick_ratio() >= CUTOFF
            and (ratio := matcher.ratio()) >= CUTOFF
        ):
            scored.append((-ratio, n, candidate))
    return [candidate for _, _, candidate in sorted(scored)[:CLOSE]]
