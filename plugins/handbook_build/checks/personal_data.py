"""HB404: personal data in a doc — e-mail addresses, phone numbers, IBANs and payment
card numbers, in the body and in frontmatter values.

A doc is published: every reader, every agent and every mirror of the bundle gets what it
says, and a search index keeps it. So a person's address or account number in a doc is a
finding, found before it ships. What counts is decided by each kind's own grammar and
check, not by a loose pattern, so that version numbers, dates, IP addresses, register
tables, hex dumps and UUIDs stay quiet:

- an e-mail address is `local@domain` with a top-level domain of letters; `user@host:path`
  (scp, git), `git@host` (git's SSH account) and the user of a URL
  (`git+ssh://git@github.com/…`; a password there is HB405's) are not mail, and
  `name@2x.png` is a file;
- an IBAN has its country's length (the IBAN registry) and a valid mod-97 checksum;
- a payment card number has 13 to 19 digits (in one group, or in groups of four, or
  4-6-5 and 4-6-4, split by spaces or dashes), a card network's prefix, and passes Luhn;
- a phone number is international (`+` and 8 to 15 digits), North American
  (`(555) 123-4567`, `555-123-4567`) or national with a trunk `0` in groups
  (`030 1234567`, `020 7946 0958`, `01 23 45 67 89`); a plain run of digits never is.

Examples are not findings: addresses at the reserved example domains (RFC 2606 and 6761:
example.com, .net and .org, and the `.example`, `.test`, `.invalid` and `.localhost`
names) and numbers in the ranges set aside for fiction (North America's 555-0100 to
555-0199, Ofcom's drama numbers in the UK, ACMA's in Australia), and whatever the library
lists under `pii.allow`. Code spans and fences are read like prose: an address in an
example configuration is still an address. A finding shows the value masked, since the
finding itself is copied into build logs and pull-request annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from .. import rules
from ..config.pii import NOTHING_ALLOWED, Allowed
from ..findings import Finding
from ..read.frontmatter import Mark
from ..read.parse import Doc

EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")
"""Reserved for documentation (RFC 2606), with their subdomains."""
EXAMPLE_TLDS = ("example", "test", "invalid", "localhost")
"""Reserved top-level names (RFC 2606, RFC 6761)."""
# fmt: off
FILE_SUFFIXES = frozenset({
    "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "md",
    "txt", "pdf", "html", "htm", "css", "js", "mjs", "ts", "json", "yaml", "yml", "toml",
    "ini", "cfg", "py", "sh", "zip", "gz", "tgz", "tar", "lock",
})
# fmt: on
"""What follows `@2x.` in a file name is a suffix, not a top-level domain."""

# fmt: off
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}
# fmt: on
"""Country -> the length of its IBANs (SWIFT's IBAN registry)."""

CARD_PREFIXES = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)|35")
"""The leading digits of the card networks (Visa, Mastercard, Amex, Diners, Discover,
UnionPay, JCB): a long number that starts otherwise is a serial, not a card."""
CARD_SHAPES = ((4, 4, 4, 1), (4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4))
"""How card numbers are printed in groups: in fours (13, 16 and 19 digits), and Amex's
and Diners' 4-6-5 and 4-6-4."""
CARD_LENGTHS = {"34": (15,), "37": (15,), "30": (14, 16), "36": (14, 16), "38": (14, 16)}
"""The networks whose numbers have fixed lengths (Amex, Diners); the others have 13 to
19 digits."""

FICTIONAL_PHONES = (
    # North America: 555-0100 to 555-0199 in every area code (NANPA)
    ("1", re.compile(r"\d{3}55501\d\d")),
    # UK: Ofcom's numbers for drama (national significant numbers)
    ("44", re.compile(r"(?:2079460|7700900|11[3-8]4960|1[2-6]14960|1914980|3069990)\d{3}")),
    # Australia: ACMA's numbers for fiction
    ("61", re.compile(r"(?:49157\d|25550|37010|75550|87010)\d{3,4}")),
)
"""(country code, national significant numbers set aside for fiction)."""

_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?P<domain>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,24}))"
    r"(?![\w-]|\.[A-Za-z0-9]|:\S)"
)
_URL_USER = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s/?#@:]*:)?\Z")
"""What comes before the user of a URL (`ssh://`, `https://user:`): `git@host` there is
the URL's user at its host, not a mailbox."""
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}")
_DIGIT_RUN = re.compile(r"(?<![\w.+/-])\d+(?:[ -]\d+)*")
_NOT_AFTER = r"(?<![\w+/.:-])(?<!\d )(?<!\d  )(?<![0-9][a-fA-F] )"
"""A phone number starts at no word, no `+`, `/`, `.`, `:` or `-` (version numbers,
paths, times, ranges), and not just after a digit or a hex pair (a row of a table or a
hex dump)."""
_NOT_BEFORE = r"(?!\w|[ .,/:-]?\d)"
"""…and the digits do not go on past it (otherwise it is a part of a longer number)."""
_PHONES = (
    re.compile(  # +49 30 1234567, +44 (0)20 7946 0958, +1-202-555-0143
        _NOT_AFTER + r"\+(?P<cc>[1-9]\d{0,2})"
        r"(?:[ .-]?(?:\(0\)[ .-]?)?(?:\(\d{1,5}\)|\d{1,6})){1,6}" + _NOT_BEFORE
    ),
    re.compile(  # (555) 123-4567, 555-123-4567, 1-800-555-1234
        _NOT_AFTER + r"(?:1[ .-])?(?:\([2-9]\d\d\)[ ]?|[2-9]\d\d[ .-])\d{3}[ .-]\d{4}" + _NOT_BEFORE
    ),
    re.compile(  # 030 1234567, 030/123 456 78, (030) 1234567, 020 7946 0958, 01 23 45 67 89
        _NOT_AFTER
        + r"(?:\(0[1-9]\d{0,3}\)[ ]?|0[1-9]\d{0,3}[ /-])\d{2,8}(?:[ -]\d{2,8}){0,4}"
        + _NOT_BEFORE
    ),
)
_DATE = re.compile(r"\d{4}[./-]\d\d?[./-]\d\d?|\d\d?[./-]\d\d?[./-]\d{2,4}")


class Found(NamedTuple):
    """One value of personal data at an offset of a text."""

    start: int
    end: int
    variant: str
    """email, phone, iban or card (the rule's message variants)."""
    key: str
    """The value normalised, as `pii.allow` entries are compared with it."""
    shown: str
    """The value masked, as the finding shows it."""


def check(doc: Doc, allowed: Allowed = NOTHING_ALLOWED) -> list[Finding]:
    """HB404 findings of the doc's frontmatter values (at the value, or the list item)
    and its body (at the value's first character)."""
    out: list[Finding] = []
    for name, value in doc.meta.items():
        field = doc.fields.get(name)
        items = field.items if field is not None else ()
        for i, item in enumerate(value if isinstance(value, list) else [value]):
            mark = items[i] if i < len(items) else doc.value_at(name)
            out += _findings(doc.path, strings(item), mark, allowed)
    if any(c in doc.body for c in "@+0123456789"):
        lines = doc.body.split("\n")
        for number, line in enumerate(lines):
            for found in scan(line):
                if found.key not in allowed:
                    out.append(_finding(doc.path, doc.body_line + number, found.start + 1, found))
    return out


def check_comments(doc: Doc, allowed: Allowed = NOTHING_ALLOWED) -> Iterator[Finding]:
    """HB404 findings of the HTML comments taken out of the body: agents never get them,
    but the site's pages and the repository still hold them (at their file lines)."""
    for comment in doc.comments:
        for found in scan(comment.text):
            if found.key not in allowed:
                yield _finding(doc.path, *comment.at(found.start), found)


def _findings(path: str, texts: Sequence[str], at: Mark, allowed: Allowed) -> Iterator[Finding]:
    for text in texts:
        for found in scan(text):
            if found.key not in allowed:
                yield _finding(path, at.line, at.col, found)


def _finding(path: str, line: int, col: int, found: Found) -> Finding:
    return rules.PERSONAL_DATA.at(path, line, col, variant=found.variant, shown=found.shown)


def strings(value: Any) -> list[str]:
    """Every string in a frontmatter value, however nested."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    return []


def scan(text: str) -> list[Found]:
    """The personal data in `text` that is not an example, in order. A number that is a
    card or an IBAN is not also read as a phone number."""
    found = [*_emails(text), *_ibans(text), *_cards(text)]
    taken = [(f.start, f.end) for f in found]
    found += [
        f for f in _phones(text) if not any(f.start < end and start < f.end for start, end in taken)
    ]
    return sorted(found)


def _emails(text: str) -> Iterator[Found]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        domain, tld = match["domain"].lower(), match["tld"].lower()
        if tld in FILE_SUFFIXES or tld in EXAMPLE_TLDS:
            continue
        if match[0].lower().startswith("git@") or _URL_USER.search(text, 0, match.start()):
            continue  # git's SSH account, or a URL's user (a password there is HB405's)
        if any(domain == d or domain.endswith("." + d) for d in EXAMPLE_DOMAINS):
            continue
        value = match[0]
        yield Found(match.start(), match.end(), "email", value.lower(), f"{value[0]}…@{domain}")


def _ibans(text: str) -> Iterator[Found]:
    for match in _IBAN_START.finditer(text):
        length = IBAN_LENGTHS.get(match[0][:2])
        if length is None:
            continue
        chars: list[str] = []
        i = match.start()
        while i < len(text) and len(chars) < length:
            c = text[i]
            if c.isascii() and (c.isdigit() or c.isupper()):
                chars.append(c)
            elif not (c == " " and i + 1 < len(text) and text[i + 1].isalnum()):
                break
            i += 1
        if len(chars) < length or (i < len(text) and text[i].isalnum()):
            continue
        iban = "".join(chars)
        if iban_valid(iban):
            yield Found(match.start(), i, "iban", iban, f"{iban[:2]}…{iban[-4:]}")


def iban_valid(iban: str) -> bool:
    """Whether `iban` (no spaces) has its country's length and a valid checksum: moved
    four characters to the end, letters as numbers (A = 10), it is 1 modulo 97."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban.isalnum():
        return False
    digits = "".join(str(int(c, 36)) for c in iban[4:] + iban[:4])
    return int(digits) % 97 == 1


def _cards(text: str) -> Iterator[Found]:
    for run in _DIGIT_RUN.finditer(text):
        if run.end() < len(text) and text[run.end()].isalnum():
            continue
        groups = [(m.start(), m.end()) for m in re.finditer(r"\d+", run[0])]
        seps = set(re.findall(r"[ -]", run[0]))
        i = 0
        while i < len(groups):
            end = _card_at(run[0], groups, i, len(seps) <= 1)
            if end is None:
                i += 1
                continue
            start, stop = run.start() + groups[i][0], run.start() + groups[end][1]
            digits = re.sub(r"\D", "", text[start:stop])
            yield Found(start, stop, "card", digits, f"…{digits[-4:]}")
            i = end + 1


def _card_at(run: str, groups: list[tuple[int, int]], first: int, one_sep: bool) -> int | None:
    """The last group of the longest card number starting at group `first`, or None."""
    best = None
    for last in range(first, min(first + 5, len(groups))):
        sizes = tuple(b - a for a, b in groups[first : last + 1])
        shaped = len(sizes) == 1 or (one_sep and sizes in CARD_SHAPES)
        digits = "".join(run[a:b] for a, b in groups[first : last + 1])
        if shaped and 13 <= len(digits) <= 19 and card_valid(digits):
            best = last
    return best


def card_valid(digits: str) -> bool:
    """A card network's prefix and length, and the Luhn checksum."""
    if not CARD_PREFIXES.match(digits):
        return False
    if len(digits) not in CARD_LENGTHS.get(digits[:2], range(13, 20)):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _phones(text: str) -> Iterator[Found]:
    seen: set[int] = set()
    for pattern in _PHONES:
        for match in pattern.finditer(text):
            if match.start() in seen or _DATE.fullmatch(match[0].strip("()")):
                continue
            number = match[0]
            digits = re.sub(r"\D", "", number.replace("(0)", ""))
            international = number.startswith("+")
            if international and not 8 <= len(digits) <= 15:
                continue
            if not international and not 9 <= len(digits) <= 12:
                continue
            if _fictional(digits, international):
                continue
            seen.add(match.start())
            key = ("+" if international else "") + digits
            yield Found(match.start(), match.end(), "phone", key, f"…{digits[-2:]}")


def _fictional(digits: str, international: bool) -> bool:
    """Whether a number is in a range set aside for fiction: with its country code, or
    (national) in North America's form or with a trunk `0` in the UK's or Australia's."""
    for country, numbers in FICTIONAL_PHONES:
        if international:
            if digits.startswith(country) and numbers.fullmatch(digits[len(country) :]):
                return True
        elif country == "1":
            if numbers.fullmatch(digits[1:] if len(digits) == 11 else digits):
                return True
        elif digits.startswith("0") and numbers.fullmatch(digits[1:]):
            return True
    return False
