"""Search hits that fit the response bound, a page at a time, never dropped silently.

An agent that asks for 100 hits wants 100 places to look, more than 100 quotations: so
when the hits do not fit `max_response_chars`, the excerpts shrink first (evenly, down
to MIN_EXCERPT_CHARS). Only then are hits left out, and the answer says how many and
gives `next_offset`, which continues exactly where this answer stopped, on every
transport (`offset` is a parameter of the tool). At the default bound, 100 hits fit.
"""

from __future__ import annotations

from typing import TypeVar

from ..answers import BriefItem, SearchAnswer, SearchHit
from ..bounds import ENVELOPE_CHARS, fit_items, fit_text, json_len

MIN_EXCERPT_CHARS = 60
"""Below this an excerpt no longer shows the words around a match."""
ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
H = TypeVar("H", SearchHit, BriefItem)


def page_of_hits(
    hits: list[SearchHit], count: int, offset: int, hint: str, max_chars: int, note: str = ""
) -> SearchAnswer:
    """The answer for `hits`, the page that starts at `offset` of `count` matches; `note`
    says how the query was shortened, if it was (`handbook.search.query_terms`)."""
    envelope = {"count": count, "returned": len(hits), "offset": offset, "next_offset": count}
    room = max_chars - json_len(envelope) - json_len(note) - len(hint) - ENVELOPE_CHARS
    if json_len(hits) <= room:  # the common case, all as they are: encoded once
        kept = hits
    else:
        hits = shrink_excerpts(hits, room)
        kept = fit_items(hits, len(hits), room)
    out: SearchAnswer = {"count": count, "hits": kept, "truncated": len(kept) < len(hits)}
    out["returned"] = len(kept)
    if offset:
        out["offset"] = offset
    after = offset + len(kept)
    if after < count:
        out["next_offset"] = after
    if len(kept) < len(hits):
        left = len(hits) - len(kept)
        more = (
            f"{left} more hit(s) of this page did not fit in one answer (max_response_chars); "
            f"call again with offset={after} for them."
        )
        hint = (hint + " " if hint else "") + more
    elif after < count:
        hint = (
            hint + " " if hint else ""
        ) + f"{count - after} more match; offset={after} continues."
    if hint:
        out["hint"] = hint
    if note:
        out["note"] = note
    return out


def shrink_excerpts(hits: list[H], room: int) -> list[H]:
    """The hits (search hits, briefing items) with excerpts cut evenly so that all fit in
    `room`, if they can while each keeps MIN_EXCERPT_CHARS; otherwise every excerpt at
    that minimum."""
    if json_len(hits) <= room or not hits:
        return hits
    bare = json_len([{**hit, "excerpt": ""} for hit in hits])
    each = max(MIN_EXCERPT_CHARS, (room - bare) // len(hits))
    return [{**hit, "excerpt": _cut(hit.get("excerpt", ""), each)} for hit in hits]


def _cut(text: str, chars: int) -> str:
    """`text` in at most `chars` characters of JSON, ending with an ellipsis when cut."""
    if json_len(text) <= chars:
        return text
    return text[: fit_text(text, chars - 1)].rstrip() + ELLIPSIS
