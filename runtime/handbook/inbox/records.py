"""What agents write back: proposals, contradictions and corroborations, as records.

A record names its target (library, doc id, the revision the agent read, optionally a
section), what it says (a proposal's markdown, or a basis) and who says it: `by` is
``key:<key id>`` when the agent signed it with a key the server declares, else
``principal:<name>``, the authenticated principal of the request. Its id is the sha256
of its signing input, canonical JSON under the kind's own domain tag
(`handbook/v1/proposal`, `…/contradiction`, `…/corroboration`): content-derived and
free of server timestamps, so a retried call is one record, and a record signature can
never pass for a review, an invalidation or a manifest.

Its text is for people at a terminal (`handbook inbox`): each CR LF is kept as LF, and
any other control character (C0 but tab and newline, DEL, C1, a lone CR) is refused, as
`handbook.terminal_text` defines them; what is shown is escaped there too.

Agents that sign build the payload with `payload` and sign ``signing_input(tag, payload)``
(`handbook.bundle.signing`); `sign` does both for Python agents.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from ..bundle.canonical import dumps
from ..bundle.signing import b64encode, keyid, signing_input
from ..terminal_text import CONTROLS

KINDS = ("proposal", "contradiction", "corroboration")
TAGS = {kind: f"handbook/v1/{kind}" for kind in KINDS}
MAX_MARKDOWN_CHARS = 20_000
MAX_BASIS_CHARS = 2_000
MAX_EVIDENCE = 16
MAX_REF_CHARS = 500
MAX_RECORD_BYTES = 64 * 1024
_CONTROL = re.compile(f"[{CONTROLS}]")


class RecordProblem(ValueError):
    """Why a record cannot be taken; `field` names the argument at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def payload(
    kind: str,
    library: str,
    doc: str,
    by: str,
    *,
    revision: str | None = None,
    section: str | None = None,
    markdown: str | None = None,
    basis: str = "",
    evidence: Sequence[str] = (),
) -> dict[str, Any]:
    """The record's signed fields, checked; raises RecordProblem naming the field. Text
    comes back with each CR LF made LF (a signing agent signs what this returns)."""
    if kind not in KINDS:
        raise RecordProblem("kind", f"kind must be one of {', '.join(KINDS)}")
    basis = _text("basis", basis, MAX_BASIS_CHARS, required=True)
    if kind == "proposal":
        markdown = _text("markdown", markdown, MAX_MARKDOWN_CHARS, required=True)
    elif markdown is not None:
        raise RecordProblem("markdown", f"a {kind} has a basis, not markdown")
    if len(evidence) > MAX_EVIDENCE:
        raise RecordProblem("evidence", f"at most {MAX_EVIDENCE} evidence references")
    refs = [_text("evidence", ref, MAX_REF_CHARS, required=True) for ref in evidence]
    out: dict[str, Any] = {"library": library, "doc": doc, "by": by, "basis": basis}
    for name, value in (("revision", revision), ("section", section), ("markdown", markdown)):
        if value is not None:
            out[name] = value
    if refs:
        out["evidence"] = refs
    for name in ("library", "doc", "by", "revision", "section"):
        if name in out:
            _text(name, out[name], MAX_RECORD_BYTES, required=False)
    size = len(dumps(out))
    if size > MAX_RECORD_BYTES:
        raise RecordProblem(
            "markdown", f"the record is {size:,} bytes; at most {MAX_RECORD_BYTES:,}"
        )
    return out


def record_id(kind: str, fields: dict[str, Any]) -> str:
    """The sha256 of the record's signing input: the same content, the same id."""
    return hashlib.sha256(signing_input(TAGS[kind], fields)).hexdigest()


def sign(kind: str, fields: dict[str, Any], private: Any) -> str:
    """An agent's signature over the record (base64), with the Ed25519 key whose key id
    its `by` names."""
    public = private.public_key().public_bytes_raw()
    if fields.get("by") != f"key:{keyid(public)}":
        raise RecordProblem("by", "`by` must be key:<the signing key's id>")
    return b64encode(private.sign(signing_input(TAGS[kind], fields)))


def _text(field: str, value: Any, limit: int, *, required: bool) -> str:
    """`value` checked as the text of `field`, CR LF made LF. Any other control character
    (C0 but tab and newline, DEL, C1; a lone CR too, which can also hide text on a
    terminal) is refused: people read these records at a terminal (`handbook inbox`)."""
    if not isinstance(value, str) or (required and not value.strip()):
        raise RecordProblem(field, f"{field} must be non-empty text")
    text: str = value.replace("\r\n", "\n")
    if len(text) > limit:
        raise RecordProblem(field, f"{field} has {len(text):,} characters; at most {limit:,}")
    control = _CONTROL.search(text)
    if control:
        raise RecordProblem(
            field,
            f"{field} holds the control character U+{ord(control[0]):04X} at character "
            f"{control.start():,}: only tab and newline are taken",
        )
    return text
