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
  `CANDIDATES` of each, the closest in length, ranked by `similarity` (no difflib: a
  ratio costs a millisecond for a long id, and its import a few on the first miss);
- **containing**: ids that hold the whole wanted id (a prefix or suffix left out), and
  of the close candidates those the wanted id holds (one added).

Work is bounded whatever the wanted id: a cut length, a dozen searches of the ids'
bytes for each anchor, and at most twice `CANDIDATES` similarities.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

MAX_WANTED = 200
"""Characters of a wanted id looked at (after stripping): a 10,000-character id costs as
much as a 200-character one."""
CANDIDATES = 20
"""Ids ranked by `similarity` from each anchor (start, end)."""
POOL = 100
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
    """The squeezed ids of one bundle, a line each. Built with two passes in C (a join
    and a squeeze) and no per-id work: a fresh process's first unknown id pays for it.
    A line found by a search is numbered by counting the line breaks before it, from
    the previous one found, so no table of line starts is made."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids
        joined = "\n".join(ids)
        if joined.count("\n") != max(0, len(ids) - 1):  # an id holding a line break
            joined = "\n".join(i.replace("\n", " ") for i in ids)
        self.text = b"\n" + squeeze(joined) + b"\n"

    def suggest(self, wanted: str) -> list[str]:
        """Ids close to `wanted`, the same ones first, then the closest, then those that
        hold it; at most `LIMIT`."""
        key = squeeze(wanted.strip()[:MAX_WANTED]).replace(b"\n", b"")
        if not key or not self.ids:
            return []
        same = [self.ids[n] for n, _ in self._find(b"\n" + key + b"\n", 1)]
        containing = [self.ids[n] for n, _ in self._find(key, 0, LIMIT)]
        candidates = dict(self._anchored(key, start=True))
        candidates.update(self._anchored(key, start=False))
        order, lines = list(candidates), list(candidates.values())
        close = [self.ids[order[n]] for n in _closest(key, lines)]
        held = [self.ids[n] for n, line in candidates.items() if line in key]
        return list(dict.fromkeys([*same, *close, *containing, *held]))[:LIMIT]

    def _anchored(self, key: bytes, start: bool) -> list[tuple[int, bytes]]:
        """Ids (number, squeezed line) that start (or end) like `key`: those sharing the
        longest start (end) of it any id has, or up to `SLACK` characters less while
        they are few (`pressurev2` shares one more with `pressure-valve` than with
        `pressure`), the closest in length first."""
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
        found: dict[int, bytes] = {}
        for length in range(low, max(shortest, low - SLACK) - 1, -1):
            if len(found) >= CANDIDATES:
                break
            needle = self._part(key, length, start)
            found.update(self._find(needle, 1 if start else 0, POOL))
        by_length = sorted(found.items(), key=lambda item: abs(len(item[1]) - len(key)))
        return by_length[:CANDIDATES]

    @staticmethod
    def _part(key: bytes, length: int, start: bool) -> bytes:
        return b"\n" + key[:length] if start else key[len(key) - length :] + b"\n"

    def _find(self, needle: bytes, anchor: int, limit: int = LIMIT) -> Iterator[tuple[int, bytes]]:
        """The lines (id number, squeezed id) `needle` occurs in, in order, at most
        `limit` of them; `anchor` is 1 for a needle that starts with the line break
        before its line, else 0."""
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
