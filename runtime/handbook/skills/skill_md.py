"""A doc as an Agent Skills `SKILL.md`: the Skills frontmatter, then the doc's body as it is.

The Skills frontmatter has `name` and `description` (required), `license`,
`compatibility`, `allowed-tools` and `metadata`, a map of text to text. A doc fills it so:

- `description` is the doc's `description` field when it fits the Skills field (a doc
  that came from a skill has one), else its summary; the summary is kept as
  ``handbook-summary`` when it is not the description. `license`, `compatibility` and
  `allowed-tools` (the
  catalog's `allowed_tools`) are the doc's fields of those names when their values fit
  the Skills field: text (`compatibility` at most 500 characters), or for
  `allowed-tools` a list of text too. A `metadata` field that maps text to text is merged
  into the skill's `metadata`.
- Every other field is kept in `metadata` as ``handbook-<field>``: the id, title, kind and
  verified state, keywords and aliases when there are any, and the rest of the doc's
  metadata. Text stays as it is; any other value (a list, a number, a map) is written as
  its JSON, and ``handbook-json-fields`` lists those fields (as a JSON array) so that a
  reader turns them back. Reading a SKILL.md back therefore gives the doc's id, fields and
  body exactly. (No field is named ``json-fields``: a catalog keeps such a name as
  ``json_fields``.)

The YAML is written here, not by a YAML library (the runtime imports none): every value is
a JSON string, which YAML reads as a double-quoted scalar, with the characters YAML would
not keep as written (C1 controls, line and paragraph separators, byte-order marks,
non-characters, lone surrogates) escaped too. Keys are sorted; the same doc always gives
the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..bundle.catalog import DocEntry

PREFIX = "handbook-"
JSON_FIELDS_KEY = PREFIX + "json-fields"
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

_NOT_KEPT = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
"""What YAML 1.1 readers would fold (NEL, LS, PS), strip or refuse inside a quoted scalar;
JSON already escapes C0 controls, quotes and backslashes."""
_PLAIN_KEY = re.compile(r"[a-z][a-z0-9_-]*")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
"""Plain keys YAML 1.1 reads as booleans or null."""


def skill_md(doc: DocEntry, name: str, body: bytes) -> bytes:
    """The SKILL.md of `doc` under the skill name `name`: frontmatter, then `body` (the
    doc's verified content bytes). `description_problem` says whether the doc has a
    description."""
    rest = dict(doc.meta)
    described = description(doc)
    if described != doc.summary:  # the doc's own description field
        rest.pop("description")
        rest["summary"] = doc.summary
    lines = ["---", f"name: {quoted(name)}", f"description: {quoted(described)}"]
    licence, compatibility, tools = (
        rest.get(f) for f in ("license", "compatibility", "allowed_tools")
    )
    if isinstance(licence, str) and licence:
        lines.append(f"license: {quoted(rest.pop('license'))}")
    if isinstance(compatibility, str) and 0 < len(compatibility) <= MAX_COMPATIBILITY:
        lines.append(f"compatibility: {quoted(rest.pop('compatibility'))}")
    if isinstance(tools, str) or (
        isinstance(tools, list) and all(isinstance(t, str) for t in tools)
    ):
        rest.pop("allowed_tools")
        shown = quoted(tools) if isinstance(tools, str) else f"[{', '.join(map(quoted, tools))}]"
        lines.append(f"allowed-tools: {shown}")
    lines.append("metadata:")
    lines += [f"  {_key(k)}: {quoted(v)}" for k, v in sorted(_metadata(doc, rest).items())]
    lines.append("---")
    return ("\n".join(lines) + "\n").encode("utf-8") + body


def description(doc: DocEntry) -> str:
    """The skill's description: the doc's `description` field when it fits, else its
    summary."""
    own = doc.meta.get("description")
    if isinstance(own, str) and 0 < len(own) <= MAX_DESCRIPTION and own != doc.summary:
        return own
    return doc.summary


def description_problem(doc: DocEntry) -> str | None:
    """Why neither the doc's `description` nor its summary can be a skill's description,
    or None."""
    if 0 < len(description(doc)) <= MAX_DESCRIPTION:
        return None
    return (
        f"doc {doc.id!r} has a summary of {len(doc.summary):,} characters; "
        f"a skill's description holds 1 to {MAX_DESCRIPTION:,}"
    )


def _metadata(doc: DocEntry, rest: Mapping[str, Any]) -> dict[str, str]:
    """The skill's `metadata`: the doc's own `metadata` map when it fits, and every field
    not written elsewhere (`rest`: the doc's metadata less the promoted fields)."""
    out: dict[str, str] = {}
    rest = dict(rest)
    own = rest.get("metadata")
    if (
        isinstance(own, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in own.items())
        and not any(k.startswith(PREFIX) for k in own)
    ):
        out.update(rest.pop("metadata"))
    fields: dict[str, Any] = {"id": doc.id, "title": doc.title, "kind": doc.kind}
    fields["verified"] = doc.verified
    if doc.keywords:
        fields["keywords"] = list(doc.keywords)
    if doc.aliases:
        fields["aliases"] = list(doc.aliases)
    fields.update(rest)
    for field, value in fields.items():
        out[PREFIX + field] = value if isinstance(value, str) else _json(value)
    as_json = sorted(field for field, value in fields.items() if not isinstance(value, str))
    if as_json:
        out[JSON_FIELDS_KEY] = _json(as_json)
    return out


def quoted(text: str) -> str:
    """`text` as a YAML double-quoted scalar that every YAML reader takes back unchanged."""
    return _NOT_KEPT.sub(
        lambda char: f"\\u{ord(char[0]):04x}", json.dumps(text, ensure_ascii=False)
    )


def _key(key: str) -> str:
    """A metadata key: plain when YAML reads it back as that text, else quoted."""
    return key if _PLAIN_KEY.fullmatch(key) and key not in _YAML_WORDS else quoted(key)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
