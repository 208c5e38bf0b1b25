"""The write tools (propose, contradict, corroborate): served only with a writable inbox
(`handbook.inbox.writable`). Each files a record for people to decide; none changes a
doc. Part of the table (`handbook.tools.table`)."""

from __future__ import annotations

from .. import answers
from . import schemas as out
from .model import Param, Tool, words
from .params import DOC_ID

_WRITES = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
           "openWorldHint": False}  # fmt: skip
"""A retried call is the same record (ids are content-derived); nothing is ever deleted."""
_BASIS = Param(
    "basis",
    {"type": "string", "maxLength": 2000},
    "Why: what you observed or checked, against what (short).",
    required=True,
)
_EVIDENCE = Param(
    "evidence",
    {"type": "array", "items": {"type": "string", "maxLength": 500}, "maxItems": 16},
    "References to evidence (log lines, ticket URLs, file paths); null for none.",
    from_text=words,
    flags=("--evidence",),
)
_SECTION = Param(
    "section", {"type": "string"}, "One section (a title or anchor); null for the whole doc."
)
_KEY_ID = Param(
    "key_id",
    {"type": "string"},
    "The id of your Ed25519 key, when you sign the record; null to be attributed to the "
    "principal of your token.",
)
_SIGNATURE = Param(
    "signature",
    {"type": "string"},
    "Your signature over the record (handbook.inbox.records); null when unsigned.",
)
_AT_REVISION = Param(
    "revision",
    {"type": "string"},
    "The revision you read (from knowledge_get); a doc that changed since is refused.",
    required=True,
)


def _judgement(name: str, verb: str, summary: str, says: str) -> Tool:
    return Tool(
        name,
        verb,
        summary,
        lambda c: f"{verb.title()} a {c.title} doc",
        lambda c: (
            f"{says} Give the doc id and the revision you read (from knowledge_get), "
            "optionally one section, and your basis. It goes to the library's inbox for people "
            "to decide; until then the doc's pedigree shows it as unreviewed, attributed to "
            "you, and its text does not change. Answers the record's id and state; calling "
            "again with the same content is the same record."
        ),
        (DOC_ID, _AT_REVISION, _BASIS, _SECTION, _EVIDENCE, _KEY_ID, _SIGNATURE),
        out.WRITE,
        answers.WriteAnswer,
        annotations=_WRITES,
        writes=True,
    )


WRITE_TOOLS: tuple[Tool, ...] = (
    Tool(
        "knowledge_propose",
        "propose",
        "Propose a new doc, or a change to a doc or one of its sections, for people to review.",
        lambda c: f"Propose a change to {c.title}",
        lambda c: (
            f"Proposes knowledge for the {c.title} library: a change to a doc (the whole "
            "markdown body, or one section's) or a new doc (an unused id and a full markdown "
            "doc with frontmatter). Give the revision you read when you change a doc. It goes "
            "to the library's inbox; people accept it as a normal docs change or reject it. "
            "Nothing you propose is served as knowledge before that."
        ),
        (
            DOC_ID,
            Param(
                "markdown",
                {"type": "string", "maxLength": 20000},
                "The proposed markdown: the section's text, the doc's body, or a new doc.",
                required=True,
            ),
            _BASIS,
            _SECTION,
            Param(
                "revision",
                {"type": "string"},
                "The revision you read, for a change to an existing doc; null for a new doc.",
            ),
            _EVIDENCE,
            _KEY_ID,
            _SIGNATURE,
        ),
        out.WRITE,
        answers.WriteAnswer,
        annotations=_WRITES,
        writes=True,
    ),
    _judgement(
        "knowledge_contradict",
        "contradict",
        "Report that a doc (or a section) is wrong, with your basis, for people to review.",
        "Reports that a doc of the library, or one section of it, is wrong: what you found "
        "in the field that disagrees with it.",
    ),
    _judgement(
        "knowledge_corroborate",
        "corroborate",
        "Report that a doc (or a section) held in the field, with your basis.",
        "Reports that a doc of the library, or one section of it, held when you acted on it.",
    ),
)
