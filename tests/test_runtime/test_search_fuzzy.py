"""The fuzzy term walk equals the definition: every term within the edit distance (as
lunr counts edits: insert, delete, substitute, swap two adjacent letters), no other."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from handbook.search.fuzzy import fuzzy as _fuzzy


def osa(a: str, b: str) -> int:
    """Optimal string alignment distance, the plain quadratic way."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


WORDS = st.text(alphabet="abcde", min_size=0, max_size=9)


@settings(max_examples=400, deadline=None)
@given(
    terms=st.lists(WORDS, min_size=1, max_size=60, unique=True),
    word=WORDS,
    distance=st.integers(0, 2),
)
def test_fuzzy_matches_the_definition(terms: list[str], word: str, distance: int) -> None:
    ordered = sorted(terms)
    found = [ordered[i] for i in _fuzzy(ordered, word, distance)]
    assert found == [t for t in ordered if osa(t, word) <= distance]


def test_long_words_are_matched_too() -> None:
    word = "cppintrinsicsinterlockedexchangepointer"
    terms = sorted(
        [
            word,
            word[:-1],
            word[1:],
            word.replace("inter", "intre"),
            word + "xy",
            word + "xyz",
            "c",
            "cpp",
        ]
    )
    found = {terms[i] for i in _fuzzy(terms, word, 2)}
    assert found == {word, word[:-1], word[1:], word.replace("inter", "intre"), word + "xy"}
