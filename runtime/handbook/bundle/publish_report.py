"""The publish report: what a release pipeline says it published, kept apart from what
the runtime verified.

A bundle proves what it holds; it cannot prove that it reached its readers. The
pipeline that uploads it (CI, a sync job) writes a small JSON report
(`handbook publish-report`), and a server told about it (`handbook serve
--publish-report FILE`, `Library.open(..., publish_report=PATH)`) shows it in `status`
under ``publish``, with ``statistics_state: reported`` — never ``verified``: nothing in
the report is signed or checked against the host it names. The file is read at each
status call, at most `MAX_REPORT_BYTES`, and a report that cannot be read is shown as
``not_reported`` with the reason, never as an exception::

    {"format": "handbook/publish-report/v1", "library": "fleet-procedures",
     "version": "1.2.0", "audience": "staff", "reported_at": "2026-01-31T12:00:00Z",
     "uploaded_files": 12, "failed_files": 0, "message": "synced to s3://kb/fleet"}

`audience` is there for a library built for audiences, and a report counts for the
library (and audience) it names only.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from .canonical import load_untrusted
from .manifest import utc_seconds

FORMAT = "handbook/publish-report/v1"
MAX_REPORT_BYTES = 16 * 1024
MAX_MESSAGE_CHARS = 1000
MAX_NAME_CHARS = 200
_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
_REQUIRED = {"format", "library", "version", "reported_at", "uploaded_files", "failed_files"}
_OPTIONAL = {"audience", "message"}


class PublishReport(TypedDict, total=False):
    format: str
    library: str
    version: str
    audience: str
    reported_at: str
    """When the pipeline wrote the report (UTC)."""
    uploaded_files: int
    failed_files: int
    message: str
    """What the pipeline said, free text (at most `MAX_MESSAGE_CHARS`)."""


class ReportError(ValueError):
    """A publish report that cannot be read or is not shaped as `FORMAT` says."""


def make_report(
    library: str,
    version: str,
    reported_at: str,
    uploaded_files: int,
    failed_files: int,
    message: str = "",
    audience: str | None = None,
) -> PublishReport:
    """A report, checked as a reader will check it (ReportError otherwise)."""
    report: dict[str, Any] = {
        "format": FORMAT,
        "library": library,
        "version": version,
        "reported_at": reported_at,
        "uploaded_files": uploaded_files,
        "failed_files": failed_files,
    }
    if message:
        report["message"] = message
    if audience is not None:
        report["audience"] = audience
    return checked(report)


def write_report(path: str | os.PathLike[str], report: PublishReport) -> None:
    """Write `report` to `path` whole or not at all (a temporary file renamed into place),
    so a server reading it mid-write sees the old report or the new one."""
    target = Path(path)
    data = json.dumps(report, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    fd, temp = tempfile.mkstemp(prefix=".publish-report-", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_report(path: str | os.PathLike[str]) -> PublishReport:
    """The report at `path`; ReportError saying what is wrong with it otherwise."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise ReportError(f"{os.fspath(path)}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"{os.fspath(path)}: larger than {MAX_REPORT_BYTES} bytes")
    try:
        parsed = load_untrusted(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{os.fspath(path)}: not UTF-8 JSON ({exc})") from None
    try:
        return checked(parsed)
    except ReportError as exc:
        raise ReportError(f"{os.fspath(path)}: {exc}") from None


def checked(data: Any) -> PublishReport:
    """`data` if it is a report of `FORMAT`, else ReportError naming the first problem."""
    if not isinstance(data, dict):
        raise ReportError(f"expected a JSON object, not {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ReportError(f"format is {str(data.get('format'))[:80]!r}, expected {FORMAT!r}")
    missing, unknown = _REQUIRED - set(data), set(data) - _REQUIRED - _OPTIONAL
    if missing or unknown:
        raise ReportError(
            f"missing {sorted(missing)}, unknown {sorted(unknown)}; "
            f"expected the keys {sorted(_REQUIRED)} and optionally {sorted(_OPTIONAL)}"
        )
    for key in ("library", "version", "audience"):
        if key in data and not _name(data[key]):
            raise ReportError(f"{key} must be a non-empty string of at most {MAX_NAME_CHARS}")
    for key in ("uploaded_files", "failed_files"):
        if type(data[key]) is not int or data[key] < 0:
            raise ReportError(f"{key} must be a whole number, 0 or more")
    when = data["reported_at"]
    if not (isinstance(when, str) and _TIME.fullmatch(when) and utc_seconds(when) is not None):
        raise ReportError("reported_at must be a UTC time like 2026-01-31T12:00:00Z")
    message = data.get("message", "")
    if not isinstance(message, str) or len(message) > MAX_MESSAGE_CHARS:
        raise ReportError(f"message must be a string of at most {MAX_MESSAGE_CHARS} characters")
    return PublishReport(**data)  # type: ignore[typeddict-item]


def applies(report: Mapping[str, Any], library: str, audience: str | None) -> bool:
    """Whether `report` is about this library (and audience, when it names one)."""
    named = report.get("audience")
    return report.get("library") == library and (named is None or named == audience)


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS and value.isprintable()
