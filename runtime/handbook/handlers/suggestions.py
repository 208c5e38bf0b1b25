"""Ids close to one no doc has, found from the squeezed ids (`handbook.bundle.id_table`:
ids.bin, or the ids squeezed in memory for a bundle without it), never by parsing the
catalog or comparing the id with every other.

Ids are squeezed (lowercased, ASCII punctuation, spaces and controls dropped: `AC-200`,
`ac 200` and `AC200` are all `ac200`), a line each. A wanted id, squeezed the same way
and cut to `MAX_WANTED` characters, is then looked up:

- **same** ids, squeezed (case, punctuation): a bisection of the lines by start;
- **close** ids: those that start with the longest start of the wanted id any id starts
  with, and those that end with the longest end any id ends with (a typo leaves one of
  the two long; a missing or extra prefix or suffix leaves one whole), found by
  bisecting the lines ordered by start and by end; at most `CANDIDATES` of each, the
  closest in length, ranked by `similarity` (no difflib: a ratio costs a millisecond
  for a long id, and its import a few on the first miss);
- **containing**: ids that hold the whole wanted id (a prefix or suffix left out), by a
  substring search of all lines (in C), and of the close candidates those the wanted
  id holds (one added).

Work is bounded whatever the wanted id: a cut length, a few bisections for each anchor,
one search of the lines, and at most twice `CANDIDATES` similarities.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence

from ..bundle.id_table import IdTable, of_ids, squeeze

MAX_WANTED = 200
"""Characters of a wanted id looked at (after stripping): a 10,000-character id costs as
much as a 200-character one."""
CANDIDATES = 20
"""Ids ranked by `similarity` from each anchor (start, end)."""
POOL = 100
"""Ids looked at for each anchor length, the first in catalog order."""
SLACK = 2
CLOSE, LIMIT, CUTOFF = 5, 10, 0.5
MIN_ANCHOR = 3
"""Shortest shared start or end that makes an id a candidate."""


class IdIndex:
    """Suggestions from one bundle's `IdTable`, or from its ids squeezed in memory."""

    def __init__(self, table: IdTable | Sequence[str]) -> None:
        self.table = table if isinstance(table, IdTable) else of_ids(table)
        self.ids = self.table.ids
        self.text = self.table.text

    def suggest(self, wanted: str) -> list[str]:
        """Ids close to `wanted`, the same ones first, then the closest, then those that
        hold it; at most `LIMIT`."""
        key = squeeze(wanted.strip()[:MAX_WANTED]).replace(b"\n", b"")
        if not key or not self.ids:
            return []
        starts = self._longest(key, start=True)  # the longest start of it any id has
        equal = self._lines(key, len(key) + 1, LIMIT, start=True) if starts == len(key) else []
        same = [self.ids[n] for n in equal]
        containing = [self.ids[n] for n, _ in self._find(key, 0, LIMIT)]
        candidates = dict(self._anchored(key, starts, start=True))
        candidates.update(self._anchored(key[::-1], self._longest(key[::-1], start=False), False))
        order, lines = list(candidates), list(candidates.values())
        close = [self.ids[order[n]] for n in _closest(key, lines)]
        held = [self.ids[n] for n, line in candidates.items() if line in key]
        return list(dict.fromkeys([*same, *close, *containing, *held]))[:LIMIT]

    def _anchored(self, probe: bytes, low: int, start: bool) -> list[tuple[int, bytes]]:
        """Ids (number, squeezed line) that start (or end) like the wanted `probe` (read
        backwards for the end): those sharing its longest start (end) any id has, `low`
        bytes, or up to `SLACK` bytes less while they are few (`pressurev2` shares one
        more with `pressure-valve` than with `pressure`), the closest in length first."""
        shortest = min(MIN_ANCHOR, len(probe))
        if low < shortest:
            return []
        found: dict[int, bytes] = {}
        for length in range(low, max(shortest, low - SLACK) - 1, -1):
            if len(found) >= CANDIDATES:
                break
            lines = self._lines(probe[:length], length, POOL, start)
            found.update((n, self.table.line(n)) for n in lines)
        by_length = sorted(found.items(), key=lambda item: abs(len(item[1]) - len(probe)))
        return by_length[:CANDIDATES]

    def _keyed(self, start: bool, length: int) -> tuple[Sequence[int], Callable[[int], bytes]]:
        """The order to bisect and the key of its n-th place: the line's first `length`
        bytes, of the line read backwards for the order by end."""
        order = self.table.by_start if start else self.table.by_end
        line = self.table.line
        assert order is not None  # called only for a table read from ids.bin

        def key(at: int) -> bytes:
            text = line(order[at])
            return (text if start else text[::-1])[:length]

        return order, key

    def _longest(self, probe: bytes, start: bool) -> int:
        """The length of the longest start of `probe` that a line starts with (a line
        read backwards, for the order by end): sorted, the lines sharing most with it
        are the two beside the place it would take. Without orders, a halving of the
        length by substring searches."""
        if self.table.by_start is None:
            low, high = 0, len(probe)
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (
                    (mid, high) if _framed(probe[:mid], start) in self.text else (low, mid - 1)
                )
            return low
        order, key = self._keyed(start, len(probe) + 1)
        at = bisect_left(range(len(order)), probe, key=key)
        near = [key(n) for n in (at - 1, at) if 0 <= n < len(order)]
        return max((_common(probe, line) for line in near), default=0)

    def _lines(self, bound: bytes, length: int, limit: int, start: bool) -> list[int]:
        """The first `limit` line numbers, in catalog order, of the lines whose first
        `length` bytes (of the line read backwards, for `start` false) are `bound`: with
        `length` the length of `bound`, the lines starting with it; one more, the lines
        equal to it. Bisected in the orders, else found by substring searches."""
        if self.table.by_start is None:
            needle = _framed(bound, start)
            if length > len(bound):  # the whole line
                needle = b"\n" + bound + b"\n"
            return [n for n, _ in self._find(needle, int(needle[:1] == b"\n"), limit)]
        order, key = self._keyed(start, length)
        places = range(len(order))
        low = bisect_left(places, bound, key=key)
        high = bisect_right(places, bound, lo=low, key=key)
        return sorted(order[low:high])[:limit]

    def _find(self, needle: bytes, anchor: int, limit: int = LIMIT) -> Iterator[tuple[int, bytes]]:
        """The lines (id number, squeezed id) `needle` occurs in, in order, at most
        `limit` of them; `anchor` is 1 for a needle that starts with the line break
        before its line, else 0. A line found is numbered by counting the line breaks
        before it, from the previous one found."""
        text = self.text
        at, found, last, line, counted = 0, 0, -1, -1, 0
        while found < limit:
            at = text.find(needle, at)
            if at < 0:
                return
            begin = text.rfind(b"\n", 0, at + anchor + 1)  # the break that opens the line
            line += text.count(b"\n", counted, begin + 1)
            counted = begin + 1
            at += 1
            if line != last and 0 <= line < len(self.ids):
                found, last = found + 1, line
                yield line, text[begin + 1 : text.find(b"\n", begin + 1)]


def _framed(probe: bytes, start: bool) -> bytes:
    """`probe` as a line starts with it (after a line break), or, for a probe read
    backwards, as a line ends with it (forwards, before a line break)."""
    return b"\n" + probe if start else probe[::-1] + b"\n"


def _closest(key: bytes, candidates: Sequence[bytes]) -> list[int]:
    """The positions of the `CLOSE` candidates most like `key` (`similarity` at least
    `CUTOFF`), best first; of equals, the closest in length, then the first."""
    pairs = _pairs(key)
    scored = []
    for n, candidate in enumerate(candidates):
        score = similarity(key, candidate, pairs)
        if score >= CUTOFF:
            scored.append((-score, abs(len(candidate) - len(key)), n))
    return [n for _, _, n in sorted(scored)[:CLOSE]]


def similarity(a: bytes, b: bytes, pairs_a: frozenset[bytes] | None = None) -> float:
    """How alike two squeezed ids are, from 0 to 1: the larger of the share of the longer
    one that their common start and end make (one typo leaves it near 1; a part left out
    or added, the share of the rest) and the Dice coefficient of their letter pairs
    (several typos, letters swapped)."""
    longest = max(len(a), len(b))
    if not longest:
        return 1.0
    shared = _common(a, b) + _common(a[::-1], b[::-1])
    pairs_a = _pairs(a) if pairs_a is None else pairs_a
    pairs_b = _pairs(b)
    both = len(pairs_a) + len(pairs_b)
    dice = 2 * len(pairs_a & pairs_b) / both if both else 0.0
    return max(min(shared, len(a), len(b)) / longest, dice)


def _common(a: bytes, b: bytes) -> int:
    """The length of the common start of `a` and `b` (compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _pairs(text: bytes) -> frozenset[bytes]:
    return frozenset(text[n : n + 2] for n in range(len(text) - 1))
