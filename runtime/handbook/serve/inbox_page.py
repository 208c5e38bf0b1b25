"""``/inbox``: the operators' read-only page of open inbox records.

`handbook serve` serves it only behind tokens (`handbook.serve.http`). Agents wrote
every value shown, so each is escaped, and the page allows no script at all.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.responses import Response

from ..bundle.manifest import utc_time
from ..errors import HandbookError

INBOX = "/inbox"
"""The operators' read-only page of open inbox records: served only behind tokens."""
MAX_INBOX_PAGE = 500
"""Open records the page shows: the newest of the asking principal's audience."""
MAX_INBOX_SCAN = 20_000
"""Open records read to find them (the caps keep a real inbox far below this)."""
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}


def inbox_page(inbox: Any, filed: set[str]) -> Response:
    """The open records filed under the asking principal's bundles (`filed`: each audience
    sees its own records only; all of them when nothing local is served), newest first;
    every value escaped (agents wrote them)."""
    try:
        records = _newest_open(inbox, filed)
    except HandbookError as exc:
        return Response(f"inbox unavailable: {exc}\n", 503, media_type="text/plain")
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(v))}</td>"
            for v in (
                r.id[:12], r.kind, f"{r.library}:{r.doc}", inbox.name_of(r.principal),
                utc_time(r.created_at), r.payload.get("section") or "",
                r.payload.get("basis", ""),
            )
        )
        + "</tr>"
        for r in reversed(records)
    )  # fmt: skip
    page = (
        "<!doctype html><meta charset=utf-8><title>Handbook inbox</title>"
        "<style>body{font:14px system-ui;margin:2rem}td,th{border-bottom:1px solid #ddd;"
        "padding:.3rem .5rem;text-align:left;vertical-align:top}</style>"
        f"<h1>Inbox: {len(records)} open record(s)</h1>"
        "<p>Read-only. Decide with <code>handbook inbox accept|reject ID</code>.</p>"
        "<table><tr><th>id</th><th>kind</th><th>doc</th><th>by</th><th>at</th>"
        f"<th>section</th><th>basis</th></tr>{rows}</table>"
    )
    return Response(page, media_type="text/html", headers=HEADERS)


def _newest_open(inbox: Any, filed: set[str]) -> list[Any]:
    """The newest `MAX_INBOX_PAGE` open records of `filed`, oldest first: read in pages,
    oldest first, keeping the last ones."""
    records: list[Any] = []
    for offset in range(0, MAX_INBOX_SCAN, MAX_INBOX_PAGE):
        page = inbox.store.records(state="open", limit=MAX_INBOX_PAGE, offset=offset)
        records += [r for r in page if not filed or r.library in filed]
        records = records[-MAX_INBOX_PAGE:]
        if len(page) < MAX_INBOX_PAGE:
            break
    return records
