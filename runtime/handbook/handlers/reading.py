"""`get` and `resource`: one doc (or one section of it), and a file attached to a doc
(whole, or one section or page of an attached markdown file).

A doc comes with its metadata, revision and section list. Content beyond the response
bound is cut, and `next_offset` fetches the rest; a doc too long for one answer comes as
its overview plus its sections, to be read one by one. With `revision`, only that exact
revision is served: a doc that changed since is refused, never replaced by new bytes.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from ..answers import GetAnswer, ResourceAnswer, SectionInfo, SubsectionInfo
from ..bounds import check_offset, clip, fit_text, json_len, refusal
from ..bundle.catalog import DocEntry, Resource, SectionEntry
from .listing import OFFSET_MESSAGE
from .snapshot import MAX_AVAILABLE_IDS, Snapshot, close_matches, find_section

RESERVE_CHARS = 400
"""Kept free for content, offset, truncated, hint, next_offset and response_chars."""
MAX_SAME_TITLE = 20
"""Other anchors listed for a title many headings share ("Example" in a long reference)."""
A = TypeVar("A", GetAnswer, ResourceAnswer)


def get_doc(
    snap: Snapshot,
    max_chars: int,
    doc_id: Any,
    section: Any = None,
    offset: Any = 0,
    revision: Any = None,
    lang: Any = None,
) -> GetAnswer:
    if not isinstance(doc_id, str) or not doc_id.strip():
        message = "doc_id must be a doc id string, as listed by list()"
        return {"found": False, "error": refusal("invalid_id", message)}
    doc = snap.doc(doc_id)
    if doc is None:
        return snap.unknown_id(doc_id)
    doc, fallback = _in_lang(snap, doc, lang)
    if revision is not None and revision != doc.revision:
        return unavailable_revision(doc, revision)
    start = check_offset(offset)
    if start is None:
        return {"found": False, "id": doc.id, "error": refusal("invalid_offset", OFFSET_MESSAGE)}
    content = snap.read(doc)
    answer = _described(snap, doc)
    answer.update(fallback)
    begin, end = 0, len(content)
    if section is not None:
        chosen = find_section(doc.headed, str(section))
        if chosen is None:
            miss: GetAnswer = {"found": False, "id": doc.id, "title": doc.title}
            return unknown_section(miss, f"doc {doc.id}", doc.headed, str(section))
        answer["section"] = read_section(doc.headed, chosen, str(section))
        begin, end = chosen.start, chosen.end
    text = content[begin:end].decode("utf-8")
    whole = section is None and start == 0 and doc.headed
    return bounded_text(answer, text, start, max_chars, overview(content, doc) if whole else None)


def read_section(
    headed: Sequence[SectionEntry], chosen: SectionEntry, wanted: str
) -> dict[str, Any]:
    """What an answer says of the section read (of a doc's or an attached file's `headed`
    sections); when `wanted` was a title that other headings share, their anchors
    (`same_title`), to read one of those instead."""
    out: dict[str, Any] = {"title": chosen.title, "anchor": chosen.anchor, "level": chosen.level}
    title = chosen.title.lower()
    if wanted.strip().lower().lstrip("#").strip() == title:
        same = [s.anchor for s in headed if s is not chosen and s.title.lower() == title]
        if same:
            out["same_title"] = same[:MAX_SAME_TITLE]
    return out


def _in_lang(snap: Snapshot, doc: DocEntry, lang: Any) -> tuple[DocEntry, GetAnswer]:
    """The doc's version in `lang` (as found when `lang` is None); when it has none, the
    doc as found, and what the answer says about that."""
    if lang is None:
        return doc, {}
    in_lang = snap.in_lang(doc.id, str(lang))
    if in_lang is not None:
        return in_lang, {}
    asked = str(lang)[:20]
    served = snap.lang_of(doc) or "default"
    hint = f"no {asked} version of {doc.id}; served the {served} one"
    return doc, {"requested_lang": asked, "fallback": True, "hint": hint}


def _described(snap: Snapshot, doc: DocEntry) -> GetAnswer:
    """What an answer says of a doc before its content: metadata, revision, sections,
    language, pedigree and attached files."""
    answer: GetAnswer = {
        "found": True,
        "id": doc.id,
        "title": doc.title,
        "metadata": metadata(doc),
        "revision": doc.revision,
        "url": doc.url,
        "sections": section_list(doc.sections),
    }
    if doc.subsections:
        answer["subsections"] = subsection_list(doc.sections, doc.subsections)
    if language := snap.lang_of(doc):
        answer["lang"] = language
    if (pedigree := snap.pedigree(doc)) is not None:
        answer["pedigree"] = pedigree
    if doc.resources:
        answer["resources"] = [
            {"path": r.path, "bytes": r.bytes, "media_type": r.media_type} for r in doc.resources
        ]
    return answer


def metadata(doc: DocEntry) -> dict[str, Any]:
    core = {"kind": doc.kind, "summary": doc.summary, "verified": doc.verified}
    return {**core, "keywords": list(doc.keywords), "aliases": list(doc.aliases), **doc.meta}


def section_list(sections: Sequence[SectionEntry]) -> list[SectionInfo]:
    return [{"title": s.title, "anchor": s.anchor, "chars": s.chars} for s in sections]


def subsection_list(
    sections: Sequence[SectionEntry], subsections: Sequence[SectionEntry]
) -> list[SubsectionInfo]:
    """Subsections in page order, each with the `##` section that holds it (sections are
    in page order: the last one that starts before it, if it has not ended)."""
    out: list[SubsectionInfo] = []
    starts = [p.start for p in sections]
    for s in subsections:
        n = bisect.bisect_left(starts, s.start) - 1
        within = sections[n].anchor if n >= 0 and s.start < sections[n].end else ""
        out.append(
            {
                "title": s.title,
                "anchor": s.anchor,
                "level": s.level,
                "chars": s.chars,
                "within": within,
            }
        )
    return out


def unavailable_revision(doc: DocEntry, revision: Any) -> GetAnswer:
    message = (
        f"doc {doc.id} is now at revision {doc.revision}, not {clip(str(revision), 80)}; "
        "the old bytes are not available"
    )
    return {
        "found": False,
        "id": doc.id,
        "revision": doc.revision,
        "error": refusal("unavailable_revision", message),
        "hint": "Fetch the current revision without `revision`, "
        "or ask the library's owner for the old version's bundle.",
    }


def unknown_section(miss: A, where: str, sections: Sequence[SectionEntry], wanted: str) -> A:
    """`miss` (naming the doc or file `where`) saying that none of its `sections` (`##`
    ones and subsections) is `wanted`: at most 5 of the closest titles and anchors, and
    the `##` sections (the subsections are listed by a `get` of the doc)."""
    key = wanted.strip().lower().lstrip("#").strip()
    containing: list[str] = [s.title for s in sections if key and key in s.title.lower()]
    names: dict[str, str] = {}  # lowercased -> as written, a title before its anchor
    for name in [s.title for s in sections] + [s.anchor for s in sections]:
        names.setdefault(name.lower(), name)
    near: list[str] = [names[n] for n in close_matches(key, list(names), n=5, cutoff=0.4)]
    close = list(dict.fromkeys([*containing, *near]))
    miss["error"] = refusal("unknown_section", f"{where} has no section {clip(wanted)!r}")
    miss["suggestions"] = close[:5]
    miss["sections"] = section_list([s for s in sections if s.level <= 2])
    return miss


def bounded_text(out: A, text: str, offset: int, max_chars: int, overview: str | None) -> A:
    """Put as much of `text` from `offset` into `out` as the bound allows, measured as
    JSON (escapes count), and say how to get the rest. When `overview` is given (a whole
    doc asked for) and the text does not fit, the overview comes instead."""
    _shorten_lists(out, max_chars)
    budget = max(0, max_chars - json_len(out) - RESERVE_CHARS)
    rest = text[offset:]
    if overview is not None and json_len(rest) > budget:
        rest = overview
        out["hint"] = (
            f"The doc has {len(text):,} characters, more than fit in one answer; here is its "
            "overview. Fetch a section by title or anchor."
        )
        out["truncated"] = True
    if json_len(rest) > budget:
        cut = fit_text(rest, budget)
        rest = rest[:cut]
        out["truncated"] = True
        out["next_offset"] = offset + cut
        out["hint"] = (
            f"Cut at {cut:,} of {len(text) - offset:,} characters; "
            f"call again with offset={offset + cut} for the rest."
        )
    out["content"] = rest
    out["offset"] = offset
    return out


def _shorten_lists(out: A, max_chars: int) -> None:
    """Halve the lists of an answer until it leaves room for content: subsections first,
    then sections, each saying how many it left out."""
    lists = cast("dict[str, Any]", out)  # the same dict, by key name
    for key in ("subsections", "sections"):
        listed: list[Any] = lists.get(key, [])
        kept = listed
        while json_len(out) + RESERVE_CHARS > max_chars and kept:
            kept = lists[key] = kept[: len(kept) // 2]
            lists[f"{key}_omitted"] = len(listed) - len(kept)


def overview(content: bytes, doc: DocEntry) -> str:
    """The content before the first section or subsection."""
    if not doc.headed:
        return content.decode("utf-8")
    return content[: min(s.start for s in doc.headed)].decode("utf-8", "replace")


def get_resource(
    snap: Snapshot,
    max_chars: int,
    doc_id: Any,
    path: Any,
    revision: Any = None,
    section: Any = None,
    offset: Any = None,
) -> ResourceAnswer:
    """A file attached to a folder doc, by its path in the doc's folder, as verified
    bytes: `content` when it is UTF-8 text, else `content_base64`. The path is only
    looked up in the doc's verified list: nothing is read from a path the caller builds.
    The whole file comes in one answer or not at all; with `section` (of an attached
    markdown file) or `offset`, a part of its text comes, cut to the bound like a doc's."""
    got = get_doc(snap, max_chars, doc_id, revision=revision)
    if not got.get("found"):
        miss: ResourceAnswer = {"found": False}
        for key in ("error", "id", "revision", "suggestions", "hint"):
            if key in got:
                miss[key] = got[key]
        return miss
    doc = snap.doc(got["id"])
    wanted = str(path).strip().removeprefix("./") if isinstance(path, str) else ""
    match = next((r for r in doc.resources if r.path == wanted), None) if doc else None
    if doc is None or match is None:
        listed = [r.path for r in doc.resources] if doc is not None else []
        message = f"doc {got['id']} has no attached file {clip(str(path))!r}"
        return {
            "found": False,
            "id": got["id"],
            "error": refusal("unknown_resource", message),
            "resources": listed[:MAX_AVAILABLE_IDS],
        }
    start = None if offset is None else check_offset(offset)
    if offset is not None and start is None:
        return {"found": False, "id": doc.id, "error": refusal("invalid_offset", OFFSET_MESSAGE)}
    out: ResourceAnswer = {
        "found": True,
        "id": doc.id,
        "ref": f"{snap.name}:{doc.id}",
        "revision": doc.revision,
        "path": match.path,
        "bytes": match.bytes,
        "sha256": match.sha256,
        "media_type": match.media_type,
    }
    if match.sections:
        out["sections"] = section_list(match.sections)
    if match.subsections:
        out["subsections"] = subsection_list(match.sections, match.subsections)
    data = snap.bundle.read(match.file)
    if section is not None:
        chosen = find_section(match.headed, str(section))
        if chosen is None:
            missed: ResourceAnswer = {"found": False, "id": doc.id, "path": match.path}
            return unknown_section(missed, match.path, match.headed, str(section))
        out["section"] = read_section(match.headed, chosen, str(section))
        data = data[chosen.start : chosen.end]
    return _with_content(out, doc, match, data, start, section is not None, max_chars)


def _with_content(
    out: ResourceAnswer,
    doc: DocEntry,
    match: Resource,
    data: bytes,
    start: int | None,
    part: bool,
    max_chars: int,
) -> ResourceAnswer:
    """`out` with the attached file's `data`: text (cut to the bound from `start`, when a
    `part` or an offset was asked for) or base64, whole or refused as too large."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if start is not None:
            message = f"{match.path} is not text: it is read whole, without offset"
            return {"found": False, "id": doc.id, "error": refusal("invalid_offset", message)}
        out["content_base64"] = base64.b64encode(data).decode("ascii")
    else:
        if part or start is not None:
            return bounded_text(out, text, start or 0, max_chars, None)
        out["content"] = text
    if json_len(out) <= max_chars:
        return out
    message = (
        f"{match.path} is {match.bytes:,} bytes, more than one answer may hold "
        f"({max_chars:,} characters)"
    )
    hint = (
        "Read its text a part at a time: offset=0, then each next_offset"
        + (", or one section by title or anchor." if match.headed else ".")
        if "content" in out
        else "Read it through the Python API with a larger max_response_chars, "
        f"or from the bundle file {match.file}"
    )
    return {
        "found": False,
        "id": doc.id,
        "path": match.path,
        "bytes": match.bytes,
        "error": refusal("too_large", message),
        "hint": hint,
    }
