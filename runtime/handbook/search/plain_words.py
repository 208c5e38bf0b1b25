"""Questions read as words, and what lunr's syntax did to a search.

`ask` and `brief` take an agent's question or task, often pasted text: "+1 nucleosomes",
"TCR/CD8", "H2A.Z", "title:foo" or "-x" there are words, not query syntax. `words` reads
a text as the index reads a document: split on whitespace and hyphens, trimmed of
punctuation at either end (lunr's tokenizer and trimmer), stop words and one-digit
numbers dropped. A token with punctuation inside ("tcr/cd8") stays whole when the library
indexes it so, and otherwise counts as its parts ("title:foo" -> title, foo): the words
the library could hold; a version or dotted name with a digit ("1.5.0", "h2a.z") is
always one word. `search` keeps lunr's syntax; `syntax_note` says
in its answer when an operator changed what was asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from lunr.stop_word_filter import WORDS as STOP_WORDS

from .query import FIELDS, MAX_QUERY_CHARS, Clause, QueryError
from .stemmer import stem

_SEPARATORS = re.compile(r"[\s\-]+")
_TRIM = re.compile(r"^\W+|\W+$")
_PARTS = re.compile(r"\w+")
_NAME = re.compile(r"(?=.*\d)\w+(?:\.\w+)+")
"""A version or a dotted name with a digit ("1.5.0", "H2A.Z"): one word, even where the
library never uses it (its absence is then what says the library does not cover it)."""


def words(text: str, indexed: Callable[[str], bool] = lambda term: False) -> list[str]:
    """`text`'s words that carry meaning, lowercased, each once, in order; `indexed(term)`
    says whether the library holds a stemmed term (for tokens with inner punctuation)."""
    out: list[str] = []
    for token in _SEPARATORS.split(text.lower()):
        token = _TRIM.sub("", token)
        if not token:
            continue
        whole = not _PARTS.fullmatch(token) and (indexed(stem(token)) or _NAME.fullmatch(token))
        parts = [token] if whole else _PARTS.findall(token)
        out += [w for w in parts if w not in STOP_WORDS and (not w.isdigit() or len(w) > 1)]
    return list(dict.fromkeys(out))


def clauses(text: str, indexed: Callable[[str], bool]) -> list[Clause]:
    """`text` as plain optional clauses, one per stemmed word; raises QueryError for a text
    over the query length cap."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            "query_too_long",
            f"the question has {len(text):,} characters; the limit is {MAX_QUERY_CHARS}: "
            "ask with fewer, more specific words",
        )
    stems = dict.fromkeys(stem(w) for w in words(text, indexed))
    return [Clause(term) for term in stems if term]


def syntax_note(parsed: Sequence[Clause]) -> str:
    """What lunr's operators did to a search query, or "" when every word was plain."""
    effects: list[str] = []
    for clause in parsed:
        if clause.presence == "required":
            effects.append(f"+ made {clause.term!r} required")
        elif clause.presence == "prohibited":
            effects.append(f"- excluded passages holding {clause.term!r}")
        if clause.fields != FIELDS:
            effects.append(f"{clause.fields[0]}: searched {clause.term!r} in that field only")
        if clause.wildcard:
            effects.append(f"* matched any word like {clause.term!r}")
        if clause.edit_distance:
            effects.append(
                f"~ matched words within {clause.edit_distance} edit(s) of {clause.term!r}"
            )
        if clause.boost != 1.0:
            effects.append(f"^ weighted {clause.term!r} by {clause.boost:g}")
    if not effects:
        return ""
    return (
        "The query used search syntax: " + "; ".join(effects) + ". To search for these "
        "characters as words, leave them out (ask and brief read every character as text)."
    )
