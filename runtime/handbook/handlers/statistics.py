"""What `status` counts, each figure labelled with who vouches for it.

Three measurements per audience and language, never merged:

- ``source_docs``: the source docs the build found for the bundle's readers, as the
  build recorded them in the catalog (`LibraryInfo.source_docs`). The signature says who
  published the figure, not that it is true of the sources: ``reported``.
- ``bundle_docs``: the docs in the bundle, counted from a catalog whose bytes were hashed
  against the signed manifest, whose doc count it must equal: ``verified``.
- ``indexed_docs``: the docs this runtime can answer from. The search file, hashed
  against the manifest like every file, must name the doc at the catalog's position under
  the catalog's id and hold at least one passage of it (`Snapshot.answerable`). Counted
  here, once per loaded bundle: ``verified``; ``not_verified_yet`` (and null) while the
  search file of a lazily opened bundle has not been read, which status does not force.

A row's ``statistics_state`` is ``verified`` when its answerable count was verified,
``reported`` when only a reported figure is there, ``not_reported`` when neither. The
last publish (`handbook.bundle.publish_report`) has a state of its own, ``reported`` or
``not_reported``, and never lifts any row's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..answers import PublishStatus, StatisticsRow
from ..bundle.locations import is_url
from .snapshot import Snapshot

VERIFIED, REPORTED, NOT_REPORTED = "verified", "reported", "not_reported"
NOT_VERIFIED_YET = "not_verified_yet"
_STRENGTH = {NOT_REPORTED: 0, REPORTED: 1, VERIFIED: 2}
REPORT = "publish report"
"""How status names the publish report (`--publish-report`): by what it is, not where."""


def statistics_rows(snap: Snapshot) -> list[StatisticsRow]:
    """One row per language of the bundle (and per language the build reported that
    has no doc in it); BundleError when the catalog does not verify."""
    audience = snap.bundle.manifest.signed.audience
    reported = snap.bundle.library_info.source_docs
    positions = snap.languages
    answerable = snap.answerable if snap.search_loaded else None  # never read it just for this
    rows: list[StatisticsRow] = []
    for lang in sorted({*positions, *(reported or {})}):
        here = positions.get(lang, [])
        source = None if reported is None else reported.get(lang, 0)
        indexed = None if answerable is None else sum(1 for n in here if n in answerable)
        rows.append(
            {
                "audience": audience,
                "lang": lang,
                "source_docs": source,
                "source_docs_state": NOT_REPORTED if source is None else REPORTED,
                "bundle_docs": len(here),
                "bundle_docs_state": VERIFIED,
                "indexed_docs": indexed,
                "indexed_docs_state": NOT_VERIFIED_YET if indexed is None else VERIFIED,
                "statistics_state": _row_state(indexed, source),
            }
        )
    return rows


def _row_state(indexed: int | None, source: int | None) -> str:
    if indexed is not None:
        return VERIFIED
    return NOT_REPORTED if source is None else REPORTED


def unlocated(message: str, locations: Iterable[str | os.PathLike[str]], label: str) -> str:
    """`message` with each of `locations` (a bundle's folder, the publish report: as
    given and as resolved) written as `label`. Status answers every principal, who is told
    what is served, never where it lies on the server's disk."""
    found = {os.fspath(place) for place in locations}
    found |= {os.path.realpath(place) for place in found if not is_url(place)}
    for place in sorted(found, key=len, reverse=True):  # a longer form before its prefix
        message = message.replace(place, label)
    return message


def weakest(states: Iterable[str]) -> str:
    """The least established of `states` (`not_reported` when there are none)."""
    return min(states, key=_STRENGTH.__getitem__, default=NOT_REPORTED)


def publish_status(
    path: str | os.PathLike[str] | None, library: str, version: str, audience: str | None
) -> PublishStatus:
    """The last publish reported for this library (and audience), read now; a report
    that is missing, malformed or about another library is `not_reported`."""
    if path is None:
        return {"statistics_state": NOT_REPORTED}
    from ..bundle.publish_report import ReportError, applies, read_report  # status only

    try:
        report = read_report(path)
    except ReportError as exc:
        return {"statistics_state": NOT_REPORTED, "error": unlocated(str(exc), [path], REPORT)}
    if not applies(report, library, audience):
        named = f"{report['library']}@{report['audience']}" if "audience" in report else ""
        return {
            "statistics_state": NOT_REPORTED,
            "error": f"{REPORT}: the report is about {named or report['library']}",
        }
    return {
        "statistics_state": REPORTED,
        "reported": dict(report),
        "matches_served": report["version"] == version,
    }
