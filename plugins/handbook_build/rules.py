"""The rule codes: the one list every finding, the docs and the config refer to.

A code is a contract. Authors silence or promote rules by code in `mkdocs.yml`, CI
greps for codes, and `docs/reference/rules.md` documents each one (a test keeps the two
in step). Codes are never reused; a retired rule keeps its number.

``HB0xx`` codes are configuration errors: they stop the run with exit 2 and cannot be
switched off. All others are findings about a file and can be set to ``error``,
``warn`` or ``off``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warn"]
Level = Literal["error", "warn", "off"]
LEVELS: tuple[Level, ...] = ("error", "warn", "off")


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str

    @property
    def configurable(self) -> bool:
        return not self.code.startswith("HB0")


_RULES = [
    # configuration (exit 2)
    Rule(
        "HB001",
        "config-invalid",
        "error",
        "The handbook configuration is missing, malformed or has a wrong key or value.",
    ),
    Rule(
        "HB002",
        "validator-import",
        "error",
        "A snippet validator named in the configuration cannot be imported.",
    ),
    # files
    Rule("HB101", "not-utf8", "error", "The file is not valid UTF-8."),
    Rule("HB102", "symlink", "error", "A symlink inside the docs root; docs must be real files."),
    Rule("HB103", "special-file", "error", "A FIFO, socket or device file inside the docs root."),
    Rule("HB104", "unsafe-path", "error", "A path that escapes the docs root or is not portable."),
    Rule(
        "HB105",
        "path-collision",
        "error",
        "Two paths that are the same after case folding or Unicode normalization.",
    ),
    Rule(
        "HB106",
        "resource-too-large",
        "error",
        "A file attached to a folder doc is over the size limit.",
    ),
    # frontmatter
    Rule(
        "HB201",
        "frontmatter-missing",
        "error",
        "The file does not start with a `---` frontmatter block.",
    ),
    Rule(
        "HB202", "frontmatter-unclosed", "error", "The frontmatter block is never closed by `---`."
    ),
    Rule("HB203", "yaml-syntax", "error", "The frontmatter is not valid YAML."),
    Rule(
        "HB204",
        "frontmatter-not-mapping",
        "error",
        "The frontmatter is valid YAML but not a mapping of fields.",
    ),
    Rule("HB205", "yaml-alias", "error", "The frontmatter uses YAML anchors or aliases."),
    Rule("HB206", "yaml-tag", "error", "The frontmatter uses an explicit YAML tag."),
    Rule(
        "HB207",
        "frontmatter-too-large",
        "error",
        "The frontmatter is over 64 KiB or nested too deeply.",
    ),
    Rule("HB208", "yaml-key", "error", "A frontmatter key is not a string, or appears twice."),
    Rule("HB209", "yaml-float", "error", "A frontmatter value is a float; quote it."),
    Rule(
        "HB210", "yaml-bool-word", "warn", "A YAML 1.1 word (yes/no/on/off) is read as a boolean."
    ),
    Rule(
        "HB211",
        "yaml-int-range",
        "error",
        "An integer is beyond ±(2^53-1), which JSON readers cannot hold exactly.",
    ),
    # fields
    Rule("HB301", "field-missing", "error", "A required field is missing or empty."),
    Rule("HB302", "field-type", "error", "A field has the wrong type or format."),
    Rule("HB303", "id-pattern", "error", "The id does not match the id pattern."),
    Rule("HB304", "id-duplicate", "error", "Two docs share an id."),
    Rule("HB305", "vocab", "error", "A value is outside the library's vocabulary for its field."),
    Rule("HB306", "summary-length", "error", "The summary is longer than the limit."),
    # body
    Rule("HB401", "body-long", "warn", "The body is over the warning limit."),
    Rule("HB402", "body-too-long", "error", "The body is over the hard limit."),
    # snippets
    Rule("HB501", "snippet-invalid", "error", "A fenced snippet fails its language's validator."),
    Rule(
        "HB502",
        "snippet-validator-crash",
        "error",
        "A snippet validator raised instead of returning errors.",
    ),
]

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
