"""Search queries: lunr's syntax, parsed and capped before anything touches the index.

Accepted, as in lunr: plain words (OR), ``+word`` (required), ``-word`` (excluded),
``field:word`` (title, keywords or body), ``word^3`` (boost), ``word~1`` (fuzzy, edit
distance at most 2) and ``*`` wildcards (at most 2 per query, never leading). Words are
split on whitespace and hyphens, lowercased, trimmed of punctuation the way indexed
text is (so ``modbus?`` finds modbus), and stemmed, except wildcard words.

Unbounded queries are the denial of service of a search index: lunr.py spends over
10 s on ``alphaalphaalpha~6`` and over 20 s on ``*f*f*f*f*f*f*f*f*f*`` on a 300-doc
index. Anything beyond the caps raises `QueryError`, which handlers turn into a
structured error the agent can act on. The cap on terms is the exception: agents paste
questions and paragraphs, so a query of more than MAX_TERMS plain words is shortened by
`handbook.search.query_terms` (which knows the index) instead of refused.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..answers import ErrorInfo
from .stemmer import stem

MAX_QUERY_CHARS = 2000
MAX_TERMS = 32
MAX_EDIT_DISTANCE = 2
MAX_WILDCARDS = 2
MAX_BOOST = 100
FIELDS = ("title", "keywords", "body")

_TERM = re.compile(
    r"^(?P<presence>[+-]?)(?:(?P<field>[a-z]+):)?(?P<word>[^~^]+?)(?:\^(?P<boost>[^~^]*))?(?:~(?P<edit>[^~^]*))?(?:\^(?P<boost2>[^~^]*))?$"
)
_SPLIT = re.compile(r"[\s]+")
_TRIM = re.compile(r"^\W*?([^\W]+)\W*?$")  # lunr's trimmer, as applied to indexed text


class QueryError(ValueError):
    """A query the index will not run; `code` is stable, the message says what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def to_dict(self) -> ErrorInfo:
        return {"code": self.code, "message": str(self)}


class Clause(NamedTuple):
    term: str
    """Lowercased and stemmed, or a wildcard pattern (not stemmed)."""
    fields: tuple[str, ...] = FIELDS
    presence: str = "optional"
    """optional | required | prohibited"""
    boost: float = 1.0
    edit_distance: int = 0

    @property
    def wildcard(self) -> bool:
        return "*" in self.term

    @property
    def plain(self) -> bool:
        """A word as written, with no syntax: the only kind a long query may lose."""
        return (
            self.presence == "optional"
            and self.fields == FIELDS
            and self.boost == 1.0
            and not self.edit_distance
            and not self.wildcard
        )


def parse(text: object) -> list[Clause]:
    """The clauses of a query; raises QueryError for anything outside the caps. More than
    MAX_TERMS clauses are returned as they are: `handbook.search.query_terms.fit` shortens them."""
    if not isinstance(text, str):
        raise QueryError("invalid_query", f"the query must be a string, not {type(text).__name__}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise QueryError(
                "invalid_query", "the query holds a lone surrogate (broken UTF-16); send text"
            ) from None
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            "query_too_long",
            f"the query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS}: use fewer, more specific words",
        )
    clauses: list[Clause] = []
    wildcards = 0
    for raw in _SPLIT.split(text.strip()):
        if not raw:
            continue
        for clause in _parse_word(raw):
            clauses.append(clause)
            wildcards += clause.term.count("*")
    if not clauses:
        raise QueryError("empty_query", "the query has no words to search for")
    if wildcards > MAX_WILDCARDS:
        raise QueryError(
            "too_many_wildcards",
            f"the query has {wildcards} wildcards; the limit is {MAX_WILDCARDS}",
        )
    if all(c.presence == "prohibited" for c in clauses):
        raise QueryError(
            "only_excluded_terms", "the query only excludes words (-word); add a word to search for"
        )
    return clauses


def _parse_word(raw: str) -> list[Clause]:
    m = _TERM.match(raw.lower())
    if m is None:
        return _plain(raw)
    presence = {"+": "required", "-": "prohibited"}.get(m["presence"], "optional")
    field = m["field"]
    if field is not None and field not in FIELDS:
        return _plain(raw)  # "error:timeout" is text, not a field
    boost_text = m["boost"] if m["boost"] is not None else m["boost2"]
    boost = 1.0
    if boost_text is not None:
        try:
            boost = float(boost_text)
        except ValueError:
            raise QueryError(
                "invalid_boost", f"{raw!r}: a boost is a number, as in word^2"
            ) from None
        if not 0 < boost <= MAX_BOOST:
            raise QueryError(
                "invalid_boost", f"{raw!r}: a boost must be above 0 and at most {MAX_BOOST}"
            )
    edit = 0
    if m["edit"] is not None:
        if not re.fullmatch(r"[0-9]{1,3}", m["edit"]):
            raise QueryError(
                "invalid_fuzzy", f"{raw!r}: fuzzy matching takes a number of edits, as in word~1"
            )
        edit = int(m["edit"])
        if edit > MAX_EDIT_DISTANCE:
            raise QueryError(
                "fuzzy_too_far", f"{raw!r}: the edit distance is at most {MAX_EDIT_DISTANCE}"
            )
    fields = (field,) if field else FIELDS
    clauses = []
    for part in [p for p in m["word"].split("-") if p]:  # lunr splits words on hyphens
        clauses.append(_clause(raw, part, fields, presence, boost, edit))
    return [c for c in clauses if c is not None]


def _clause(
    raw: str, word: str, fields: tuple[str, ...], presence: str, boost: float, edit: int
) -> Clause | None:
    if "*" in word:
        if word.startswith("*"):
            raise QueryError(
                "leading_wildcard",
                f"{raw!r}: a wildcard may not start a word; put letters first, as in modb*",
            )
        if edit:
            raise QueryError(
                "invalid_fuzzy", f"{raw!r}: a word cannot be both fuzzy (~) and a wildcard (*)"
            )
        return Clause(word, fields, presence, boost)
    m = _TRIM.match(word)
    word = m.group(1) if m else word
    if not any(ch.isalnum() for ch in word):
        return None
    return Clause(stem(word), fields, presence, boost, edit)


def _plain(raw: str) -> list[Clause]:
    words = [w for w in re.split(r"[^\w*]+", raw.lower()) if w]
    return [c for w in words if (c := _clause(raw, w, FIELDS, "optional", 1.0, 0)) is not None]
