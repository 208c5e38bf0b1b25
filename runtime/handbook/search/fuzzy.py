"""Fuzzy term matching (``word~2``) over the index's sorted terms, within a time bound.

lunr.py spends over 10 s on ``alphaalphaalpha~6`` on a 300-doc index; here the edit
distance is capped by the query parser and the walk below costs at most one row of a
banded table per character of each term that shares no hopeless prefix.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator


def fuzzy(terms: list[str], word: str, distance: int) -> Iterator[int]:
    """Terms within `distance` edits (insertions, deletions, substitutions and adjacent
    transpositions, as lunr counts them), walking the sorted list as an implicit trie:
    a prefix whose best possible distance already exceeds the limit is skipped whole.
    Only the band of cells within `distance` of the diagonal is computed (the others
    exceed it by construction) and values are capped at `distance` + 1, so a row costs
    the same for a 4-letter word and a 50-letter one."""
    n = len(word)
    cap = distance + 1
    rows: list[list[int]] = [
        [min(j, cap) for j in range(n + 1)]
    ]  # rows[k]: distances after k chars of the term
    previous = ""
    i = 0
    while i < len(terms):
        term = terms[i]
        common = 0
        limit = min(len(previous), len(term), len(rows) - 1)
        while common < limit and previous[common] == term[common]:
            common += 1
        del rows[common + 1 :]
        pruned_at = -1
        for k in range(common, len(term)):
            ch = term[k]
            above = rows[k]
            row = [cap] * (n + 1)
            row[0] = min(k + 1, cap)
            lo, hi = max(1, k + 1 - distance), min(n, k + 1 + distance)
            for j in range(lo, hi + 1):
                value = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (word[j - 1] != ch))
                if k >= 1 and j >= 2 and ch == word[j - 2] and term[k - 1] == word[j - 1]:
                    value = min(value, rows[k - 1][j - 2] + 1)
                row[j] = value if value < cap else cap
            rows.append(row)
            if row[0] > distance and (lo > hi or min(row[lo : hi + 1]) > distance):
                pruned_at = k
                break
        previous = term
        if pruned_at >= 0:
            # every term sharing term[: pruned_at + 1] is out of reach: jump past them
            i = bisect.bisect_left(terms, term[: pruned_at + 1] + "\U0010ffff", i + 1)
            previous = term[:pruned_at]
            del rows[pruned_at + 1 :]
            continue
        if rows[len(term)][n] <= distance:
            yield i
        i += 1
