"""The `pii` setting: personal data that is meant to be published (a support address, a
company's phone number), compared in one normalised form with what HB404 finds."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Allowed:
    """The `pii` option: values and patterns that are meant to be published."""

    allow: tuple[str, ...] = ()
    """As written: e-mail addresses, phone numbers, IBANs or card numbers, or glob
    patterns of them (`*@acme.example`, `+49 30 901820*`)."""

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and any(
            fnmatch.fnmatchcase(key, normalised(pattern)) for pattern in self.allow
        )


def normalised(value: str) -> str:
    """The form values are compared in: an e-mail address in lower case; a number
    (phone, card, IBAN) without its spaces, dashes, dots, slashes and brackets, in upper
    case (`*` and `?` are kept for patterns)."""
    if "@" in value:
        return value.strip().lower()
    return re.sub(r"[\s().\-/]", "", value).upper()


NOTHING_ALLOWED = Allowed()
