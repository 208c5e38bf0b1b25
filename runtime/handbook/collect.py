"""`collect` and `ask`: several docs in one budgeted call, and a grounded answer, over one
library or several (a `Shelf`).

Identities. Every doc has a qualified ref ``<library>:<id>``. An unqualified id works
while exactly one library owns it; an id owned by several is never resolved by
precedence (the first library listed does not win): it is reported as ambiguous, with
the qualified choices.

`collect` returns ``{items, omissions, no_match, bytes_used, budget}``. Filters apply
before limits; explicit ids keep the caller's order, a query ranks (best doc score,
then ref). Items carry the whole doc, or, when it does not fit the byte budget, the
sections that matched the query. Everything left out is in `omissions` with a reason:

=====================  ==============================================================
``invalid_identity``   not a doc id (or ``library:id``) at all
``unknown_identity``   no library has it (`detail` suggests close ids)
``ambiguous_identity`` several libraries have it (`choices` are the qualified refs)
``duplicate_identity`` the same doc asked for twice
``unavailable_revision`` the doc's revision is not the one asked for; new bytes are never substituted
``filters``            the doc exists but does not match the filters
``query``              an explicit id whose doc does not match the query
``output_limit``       beyond `limit`, or not fitting `max_bytes`
=====================  ==============================================================

`max_bytes` counts the UTF-8 bytes of returned content only, never the envelope. The
same call on the same bundles gives the same bytes.

`ask` never writes text of its own: it quotes passages. See `ask` for the thresholds.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lunr.stop_word_filter import WORDS as STOP_WORDS

from .catalog import DocEntry
from .query import QueryError, parse
from .stemmer import stem

if TYPE_CHECKING:
    from .library import Library

DEFAULT_COLLECT_LIMIT = 10
DEFAULT_COLLECT_BYTES = 32_000
MAX_COLLECT_IDS = 100
MAX_LISTED_BEYOND_LIMIT = 50
"""Docs left out by `limit` are listed one by one up to this many, then counted."""
DEFAULT_ASK_SOURCES = 3
GROUNDED_COVERAGE = 0.75
"""`ask` is grounded when its best passages hold at least this share of the question's
key terms (stop words dropped, stemmed)…"""
GROUNDED_TOP_COVERAGE = 0.5
"""…and the single best passage holds at least this share: evidence must be concentrated,
not a word here and a word there."""

_ID = re.compile(
    r"^(?:(?P<library>[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*):)?(?P<id>[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*)$"
)
_WORDS = re.compile(r"\w+")


def ref(library: Library, doc: DocEntry) -> str:
    return f"{library.name}:{doc.id}"


class Resolution:
    """A doc found for a caller's identity, or why none was."""

    def __init__(
        self,
        library: Library | None = None,
        doc: DocEntry | None = None,
        reason: str = "",
        detail: str = "",
        choices: Sequence[str] = (),
    ) -> None:
        self.library, self.doc, self.reason, self.detail, self.choices = (
            library,
            doc,
            reason,
            detail,
            list(choices),
        )

    def omission(self, identity: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": identity if isinstance(identity, str) else repr(identity)[:200],
            "reason": self.reason,
        }
        if self.detail:
            out["detail"] = self.detail
        if self.choices:
            out["choices"] = self.choices
        return out


def resolve(libraries: Sequence[Library], identity: Any) -> Resolution:
    """The doc an identity names across `libraries`, never by precedence."""
    if not isinstance(identity, str) or not (match := _ID.fullmatch(identity.strip())):
        return Resolution(
            reason="invalid_identity",
            detail="a doc id looks like device.acme.ac200, or library:device.acme.ac200",
        )
    wanted_library, doc_id = match["library"], match["id"]
    owners = [
        (lib, doc)
        for lib in libraries
        if wanted_library in (None, lib.name) and (doc := lib.doc(doc_id)) is not None
    ]
    if not owners:
        known = [lib.name for lib in libraries]
        if wanted_library is not None and wanted_library not in known:
            return Resolution(
                reason="unknown_identity",
                detail=f"no library {wanted_library!r}; the libraries are {', '.join(known)}",
            )
        close = [s for lib in libraries for s in lib.suggest(doc_id)][:5]
        return Resolution(
            reason="unknown_identity",
            detail=("did you mean " + ", ".join(close)) if close else "no library has this id",
        )
    if len(owners) > 1:
        return Resolution(
            reason="ambiguous_identity",
            detail="several libraries have this id; ask for one of the qualified refs",
            choices=[ref(lib, doc) for lib, doc in owners],
        )
    return Resolution(*owners[0])


def collect(
    libraries: Sequence[Library],
    query: str | None = None,
    ids: Sequence[str] | None = None,
    revisions: Mapping[str, str] | None = None,
    limit: int = DEFAULT_COLLECT_LIMIT,
    max_bytes: int = DEFAULT_COLLECT_BYTES,
    max_chars: int | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """See the module docstring. `max_chars` is the operator's bound on the whole answer
    (`max_response_chars`): items that would pass it are left out as `output_limit`."""
    if ids is not None and not isinstance(ids, (str, bytes)) and isinstance(ids, Iterable):
        ids = list(ids)  # an iterator is read once, here
    problem = _check_args(ids, revisions, limit, max_bytes)
    if problem:
        return {
            "items": [],
            "omissions": [],
            "no_match": True,
            "bytes_used": 0,
            "budget": max_bytes if isinstance(max_bytes, int) else None,
            "error": {"code": "bad_arguments", "message": problem},
        }
    revisions = dict(revisions or {})
    active = {k: v for k, v in filters.items() if v is not None and str(v).lower() != "any"}
    for name, value in active.items():
        problems = [lib.filter_problem(name, value) for lib in libraries]
        if libraries and all(problems):
            return {
                "items": [],
                "omissions": [],
                "no_match": True,
                "bytes_used": 0,
                "budget": max_bytes,
                "hint": problems[0],
            }
    omissions: list[dict[str, Any]] = []
    try:
        matches = (
            _query_matches(libraries, query) if query is not None and str(query).strip() else None
        )
    except QueryError as exc:
        return {
            "items": [],
            "omissions": [],
            "no_match": True,
            "bytes_used": 0,
            "budget": max_bytes,
            "error": exc.to_dict(),
        }

    chosen: list[tuple[Library, DocEntry]] = []
    if ids is not None:
        seen: set[str] = set()
        for identity in ids:
            found = resolve(libraries, identity)
            if found.library is None or found.doc is None:
                omissions.append(found.omission(identity))
                continue
            qualified = ref(found.library, found.doc)
            if qualified in seen:
                omissions.append(
                    {
                        "id": identity,
                        "reason": "duplicate_identity",
                        "detail": f"{qualified} is already in this call",
                    }
                )
                continue
            seen.add(qualified)
            chosen.append((found.library, found.doc))
    else:
        pool = [(lib, doc) for lib in libraries for doc in lib.bundle.catalog.docs]
        if matches is not None:
            pool = [p for p in pool if ref(*p) in matches]
            pool.sort(key=lambda p: (-matches[ref(*p)][0], ref(*p)))
        else:
            pool.sort(key=lambda p: ref(*p))
        chosen = pool

    selected: list[tuple[Library, DocEntry]] = []
    for lib, doc in chosen:
        qualified = ref(lib, doc)
        wanted = revisions.get(qualified, revisions.get(doc.id))
        if wanted is not None and wanted != doc.revision:
            omissions.append(
                {
                    "id": qualified,
                    "reason": "unavailable_revision",
                    "detail": f"asked for revision {str(wanted)[:64]}, the library has {doc.revision}; its old bytes are not available",
                }
            )
        elif active and not lib.matches(doc, active):
            omissions.append(
                {
                    "id": qualified,
                    "reason": "filters",
                    "detail": "does not match " + ", ".join(f"{k}={v}" for k, v in active.items()),
                }
            )
        elif ids is not None and matches is not None and qualified not in matches:
            omissions.append(
                {
                    "id": qualified,
                    "reason": "query",
                    "detail": f"does not match the query {str(query)[:100]!r}",
                }
            )
        else:
            selected.append((lib, doc))

    items: list[dict[str, Any]] = []
    used = 0
    for position, (lib, doc) in enumerate(selected):
        qualified = ref(lib, doc)
        if position >= limit:
            beyond = len(selected) - limit
            if position < limit + MAX_LISTED_BEYOND_LIMIT:
                omissions.append(
                    {"id": qualified, "reason": "output_limit", "detail": f"beyond limit={limit}"}
                )
            elif position == limit + MAX_LISTED_BEYOND_LIMIT:
                omissions.append(
                    {
                        "id": None,
                        "reason": "output_limit",
                        "count": beyond - MAX_LISTED_BEYOND_LIMIT,
                        "detail": f"{beyond - MAX_LISTED_BEYOND_LIMIT:,} more docs beyond limit={limit}, not listed one by one; narrow the query or filters",
                    }
                )
            continue
        content = lib.bundle.read(doc.content)
        item: dict[str, Any] = {
            "ref": qualified,
            "id": doc.id,
            "library": lib.name,
            "revision": doc.revision,
            "title": doc.title,
        }
        if used + len(content) <= max_bytes:
            item.update(content=content.decode("utf-8"), whole=True, bytes=len(content))
        else:
            part, names = _matched_sections(
                doc,
                content,
                matches.get(qualified, (0.0, []))[1] if matches else [],
                max_bytes - used,
            )
            if not part:
                omissions.append(
                    {
                        "id": qualified,
                        "reason": "output_limit",
                        "detail": f"needs {len(content):,} bytes, {max_bytes - used:,} of max_bytes left; get it alone, or by section",
                    }
                )
                continue
            item.update(content=part.decode("utf-8"), whole=False, bytes=len(part), sections=names)
        used += item["bytes"]
        items.append(item)
    out = {
        "items": items,
        "omissions": omissions,
        "no_match": not chosen,
        "bytes_used": used,
        "budget": max_bytes,
    }
    return _within(out, max_chars) if max_chars else out


def _within(out: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """`out` cut to the operator's response bound: items from the end become
    `output_limit` omissions, then listed omissions are counted instead."""

    def size() -> int:
        return (
            len(json.dumps(out, ensure_ascii=False)) + 200
        )  # room for the size fields added later

    cut = False
    while size() > max_chars and out["items"]:
        item = out["items"].pop()
        out["bytes_used"] -= item["bytes"]
        out["omissions"].insert(
            0,
            {
                "id": item["ref"],
                "reason": "output_limit",
                "detail": "does not fit the response size the operator allows; ask for it alone",
            },
        )
        cut = True
    while size() > max_chars and len(out["omissions"]) > 1:
        dropped = out["omissions"].pop()
        count = dropped.get("count", 1)
        if out["omissions"][-1].get("id") is None and out["omissions"][-1].get("count"):
            out["omissions"][-1]["count"] += count
        else:
            out["omissions"].append(
                {
                    "id": None,
                    "reason": "output_limit",
                    "count": count,
                    "detail": "more omissions, not listed",
                }
            )
            if size() > max_chars:
                out["omissions"].pop(-2)
        cut = True
    if cut:
        out["truncated"] = True
        out["hint"] = (
            "The answer was cut to the response size the operator allows; collect fewer docs or lower max_bytes."
        )
    return out


def _check_args(ids: Any, revisions: Any, limit: Any, max_bytes: Any) -> str | None:
    if ids is not None and (isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable)):
        return "ids must be a list of doc ids"
    if ids is not None and len(list(ids)) > MAX_COLLECT_IDS:
        return f"at most {MAX_COLLECT_IDS} ids per call"
    if revisions is not None and not isinstance(revisions, Mapping):
        return "revisions must map doc ids to revisions"
    for name, value in (("limit", limit), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a whole number, 1 or more"
    return None


def _query_matches(libraries: Sequence[Library], query: str) -> dict[str, tuple[float, list[str]]]:
    """ref -> (best entry score, anchors of the sections that matched) for `query`."""
    clauses = parse(query)
    out: dict[str, tuple[float, list[str]]] = {}
    for lib in libraries:
        index = lib.search_index
        ids, anchors = index.strings("doc_id"), index.strings("entry_anchor")
        scores, _ = index.scores(clauses)
        for entry, score in scores.items():
            qualified = f"{lib.name}:{ids[index.entry_doc[entry]]}"
            best, matched = out.get(qualified, (0.0, []))
            anchor = anchors[entry]
            out[qualified] = (max(best, score), [*matched, anchor] if anchor else matched)
    return out


def _matched_sections(
    doc: DocEntry, content: bytes, anchors: Sequence[str], room: int
) -> tuple[bytes, list[str]]:
    """The matched sections, in doc order, that fit in `room` bytes."""
    wanted = set(anchors)
    parts, names, size = [], [], 0
    for section in doc.sections:
        if section.anchor not in wanted:
            continue
        piece = content[section.start : section.end]
        if size + len(piece) > room:
            continue
        parts.append(piece)
        names.append(section.title)
        size += len(piece)
    return b"".join(parts), names


# -- ask --------------------------------------------------------------------------------------


def key_words(text: str) -> list[str]:
    """The question's words that carry meaning: lowercased, stop words dropped."""
    words = [w.lower() for w in _WORDS.findall(text)]
    return list(
        dict.fromkeys(w for w in words if w not in STOP_WORDS and (not w.isdigit() or len(w) > 1))
    )


def key_terms(text: str) -> list[str]:
    """The question's key words as the index holds them: stemmed."""
    return list(dict.fromkeys(stem(w) for w in key_words(text)))


def ask(
    libraries: Sequence[Library],
    question: Any,
    limit: int = DEFAULT_ASK_SOURCES,
    correlation_id: str | None = None,
    max_chars: int | None = None,
) -> dict[str, Any]:
    """A grounded answer that quotes the library, or an honest "insufficient".

    The question's key terms are searched as plain words (no query syntax). The answer is
    `grounded` when the best `limit` passages hold at least GROUNDED_COVERAGE of the key
    terms and the best one alone GROUNDED_TOP_COVERAGE; the answer then quotes each
    passage with its source. Otherwise it is `insufficient`: the closest passages are
    listed as sources and the missing terms named, and no procedure is offered.
    `unavailable` when no verified library is loaded."""
    correlation = correlation_id or uuid.uuid4().hex
    names = ", ".join(f"{lib.name} {lib.version}" for lib in libraries)
    base: dict[str, Any] = {
        "library": names or None,
        "version": libraries[0].version if len(libraries) == 1 else None,
        "correlation_id": correlation,
    }
    if not libraries:
        return {
            **base,
            "answer": "No verified library is loaded, so there is no evidence to answer from.",
            "evidence_state": "unavailable",
            "sources": [],
        }
    if not isinstance(question, str) or not question.strip():
        return {
            **base,
            "answer": "Ask a question in words.",
            "evidence_state": "insufficient",
            "sources": [],
            "error": {"code": "bad_arguments", "message": "question must be a non-empty string"},
        }
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10:
        return {
            **base,
            "answer": "",
            "evidence_state": "insufficient",
            "sources": [],
            "error": {
                "code": "bad_arguments",
                "message": "limit must be a whole number from 1 to 10",
            },
        }
    words = key_words(question)[:32]
    terms = list(dict.fromkeys(stem(w) for w in words))
    if not terms:
        return {
            **base,
            "answer": "The question has no words the library could match (only stop words).",
            "evidence_state": "insufficient",
            "sources": [],
            "key_terms": [],
        }
    passages = []
    for lib in libraries:
        found = lib.search(
            " ".join(words), limit=limit * 2
        )  # the words, not the stems: search stems them
        for hit in found.get("hits", []):
            passages.append((hit["score"], f"{lib.name}:{hit['id']}", lib, hit))
    passages.sort(key=lambda p: (-p[0], p[1], p[3].get("anchor") or ""))
    while True:
        answer = _answer(passages[:limit], terms, names, len(libraries) > 1)
        if (
            not max_chars
            or limit == 1
            or len(json.dumps(answer, ensure_ascii=False)) + 400 <= max_chars
        ):
            break
        limit -= 1  # fewer quoted passages, to stay within the operator's response bound
    return {**base, **answer}


def _answer(
    best: list[tuple[float, str, Library, dict[str, Any]]],
    terms: list[str],
    names: str,
    qualified: bool,
) -> dict[str, Any]:
    covered: list[set[str]] = [
        set(terms) & set(lib.passage_terms(hit["id"], hit.get("anchor"))) for _, _, lib, hit in best
    ]
    union = set().union(*covered) if covered else set()
    coverage = len(union) / len(terms)
    top = len(covered[0]) / len(terms) if covered else 0.0
    sources = [_source(lib, hit) for _, _, lib, hit in best]
    state = (
        "grounded"
        if best and coverage >= GROUNDED_COVERAGE and top >= GROUNDED_TOP_COVERAGE
        else "insufficient"
    )
    missing = [t for t in terms if t not in union]
    if state == "grounded":
        lines = [f"From {len(sources)} passage(s) of {names}:"]
        lines += [
            f"{n}. {s['title']}"
            + (
                f" \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} {s['section']}"
                if s["section"]
                else ""
            )
            + f" [{s['ref'] if qualified else s['document_id']}]: \u201c{s['excerpt']}\u201d"
            for n, s in enumerate(sources, 1)
        ]
        answer = "\n".join(lines)
    else:
        answer = (
            f"The library does not cover this question well enough: its best passages match {len(union)} of "
            f"{len(terms)} key terms"
            + (f" (missing: {', '.join(missing)})" if missing else "")
            + ". No answer is given; the closest passages are listed as sources."
        )
    return {
        "answer": answer,
        "evidence_state": state,
        "sources": sources,
        "coverage": round(coverage, 3),
        "key_terms": terms,
        "missing_terms": missing,
    }


def _source(lib: Library, hit: Mapping[str, Any]) -> dict[str, Any]:
    doc = lib.doc(hit["id"])
    version = doc.meta.get("version") if doc is not None else None
    return {
        "document_id": hit["id"],
        "ref": f"{lib.name}:{hit['id']}",
        "title": hit["title"],
        "version": str(version) if version is not None else lib.version,
        "section": hit.get("section"),
        "anchor": hit.get("anchor"),
        "excerpt": hit.get("excerpt", ""),
        "score": hit["score"],
    }
