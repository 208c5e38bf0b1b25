"""HB404 personal-data: e-mail addresses, phone numbers, IBANs and card numbers in a doc
are found at their line and column, masked; examples (reserved domains, fictional
numbers, `pii.allow`) are not; and numbers that only look long — versions, dates, IP
addresses, register tables, UUIDs, hex dumps — never are."""

from __future__ import annotations

import pytest
from conftest import MakeLibrary, run_cli

from handbook_build.checks.personal_data import (
    NOTHING_ALLOWED,
    Allowed,
    card_valid,
    check,
    iban_valid,
    scan,
)
from handbook_build.read.parse import parse
from handbook_build.read.source import Text

FM = "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n---\n"
"""Six lines: a body's first line is line 7 of the file."""
TAIL = (
    ": every reader and agent would get it; remove it, use an example, or list it under `pii.allow`"
)


def findings(text: str, allowed: Allowed = NOTHING_ALLOWED) -> list[str]:
    doc, problems = parse(Text("a.md", text))
    assert doc is not None and problems == []
    return [str(f) for f in check(doc, allowed)]


def found(line: str) -> list[tuple[str, str]]:
    return [(f.variant, line[f.start : f.end]) for f in scan(line)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Write to jane.doe@acme-corp.com.", [("email", "jane.doe@acme-corp.com")]),
        ("<mailto:Max.Mustermann+hb@mail.acme.de>", [("email", "Max.Mustermann+hb@mail.acme.de")]),
        ("Call +49 30 1234567 today.", [("phone", "+49 30 1234567")]),
        ("Call +4930 1234567-0 today.", [("phone", "+4930 1234567-0")]),
        ("+44 (0)161 123 4567", [("phone", "+44 (0)161 123 4567")]),
        ("or (555) 123-4567,", [("phone", "(555) 123-4567")]),
        ("or 555-123-4567 or 555.123.4567", [("phone", "555-123-4567"), ("phone", "555.123.4567")]),
        ("1-800-555-1234", [("phone", "1-800-555-1234")]),
        ("Tel. 030 1234567", [("phone", "030 1234567")]),
        ("Fax: (030) 123 456-78", [("phone", "(030) 123 456-78")]),
        ("mobil 0170/1234567", [("phone", "0170/1234567")]),
        ("appelez 01 23 45 67 89", [("phone", "01 23 45 67 89")]),
        ("IBAN DE89 3704 0044 0532 0130 00.", [("iban", "DE89 3704 0044 0532 0130 00")]),
        ("GB82WEST12345698765432", [("iban", "GB82WEST12345698765432")]),
        ("FR14 2004 1010 0505 0001 3M02 606", [("iban", "FR14 2004 1010 0505 0001 3M02 606")]),
        ("card 4111 1111 1111 1111 exp 12/29", [("card", "4111 1111 1111 1111")]),
        ("card 5555-5555-5555-4444", [("card", "5555-5555-5555-4444")]),
        ("amex 378282246310005", [("card", "378282246310005")]),
        ("amex 3782 822463 10005", [("card", "3782 822463 10005")]),
        ("visa 4222 2222 2222 2", [("card", "4222 2222 2222 2")]),
        ("`jane@acme-corp.com` in a code span", [("email", "jane@acme-corp.com")]),
    ],
)
def test_personal_data_is_found(line: str, expected: list[tuple[str, str]]) -> None:
    assert found(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        # examples: reserved domains (RFC 2606, RFC 6761) and fictional numbers
        "support@acme.example, ops@example.com, a@mail.example.org, x@y.test, z@host.invalid",
        "dev@box.localhost or admin@example.net",
        "(202) 555-0143, 202-555-0199, +1 202 555 0100",
        "020 7946 0958, +44 20 7946 0123, 07700 900123, +44 7700 900456, 0113 496 0000",
        "+61 491 570 156, 0491 570 006, (02) 5550 1234",
        # not mail
        "git clone git@github.com:acme/repo.git",
        "icon@2x.png, logo@3x.svg, pkg@1.2.3, @decorator, npm i @scope/pkg@latest",
        "docker pull image@sha256:0123abcd",
        # versions, dates, times, IP addresses
        "version 1.2.3, 10.0.19041, v2.10.300, 2024.10.1, 3.12.0-rc.1+build.5",
        "2026-01-31, 31.01.2026, 01/31/2026, 05-06-2026, 2026-01-31T08:00:00Z",
        "08:00-17:00, 09:30 - 18:00 CET",
        "192.168.1.10, 10.0.0.1, 255.255.255.0, ::1, fe80::1ff:fe23:4567:890a",
        # register tables, hex, UUIDs, hex dumps, serials, timestamps
        "| 40001 | 40010 | holding | 0x0100 | 16 |",
        "| 0x4000_1000 | 0x4000_1004 | 1073745920 |",
        "0100 0200, 0x40001000, 0xDEADBEEF, #ff0044",
        "123e4567-e89b-12d3-a456-426614174000 550e8400-e29b-41d4-a716-446655440000",
        "00000000  7f 45 4c 46 02 01 01 00 00 00 00 00 00 00 00 00",
        "00000010  02 01 01 07 08",
        "0010: 4c 02 01 01 07 08",
        "serial 4000400140024003, ts 1700000000000, order 12345678901234",
        # numbers that fail their checks
        "card 4111 1111 1111 1112, IBAN DE89 3704 0044 0532 0130 01",
        "DE00 1234 5678 9012 3456 78, AB12 3456 7890 1234",
        # plain runs of digits are never phone numbers
        "part 0301234567, code 5551234567",
    ],
)
def test_look_alikes_and_examples_are_not_found(line: str) -> None:
    assert found(line) == []


def test_checksums() -> None:
    assert iban_valid("DE89370400440532013000")
    assert iban_valid("GB82WEST12345698765432")
    assert not iban_valid("DE89370400440532013001")
    assert not iban_valid("DE8937040044053201300")  # one short for Germany
    assert card_valid("4111111111111111")
    assert card_valid("6011111111111117")
    assert not card_valid("4111111111111112")
    assert not card_valid("1234567812345670")  # Luhn-valid, no network's prefix
    assert not card_valid("3782822463100050")  # Amex numbers have 15 digits


def test_findings_are_placed_and_masked() -> None:
    text = (
        "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n"
        "contact: jane.doe@acme-corp.com\n"
        "owners_mail:\n  - ops@example.com\n  - max@acme-corp.com\n---\n"
        "Call +49 30 1234567 or (555) 123-4567.\n"
        "IBAN DE89 3704 0044 0532 0130 00, card 4111 1111 1111 1111.\n"
        "```yaml\nowner: max@acme-corp.com\n```\n"
    )
    assert findings(text) == [
        f"a.md:6:10: HB404 (warning) e-mail address j…@acme-corp.com{TAIL}",
        f"a.md:9:5: HB404 (warning) e-mail address m…@acme-corp.com{TAIL}",
        f"a.md:11:6: HB404 (warning) phone number …67{TAIL}",
        f"a.md:11:24: HB404 (warning) phone number …67{TAIL}",
        f"a.md:12:6: HB404 (warning) IBAN DE…3000 (its checksum is valid){TAIL}",
        f"a.md:12:40: HB404 (warning) payment card number …1111 (it passes the Luhn check){TAIL}",
        f"a.md:14:8: HB404 (warning) e-mail address m…@acme-corp.com{TAIL}",
    ]


def test_the_allow_list_takes_values_and_patterns() -> None:
    text = FM + (
        "support@Acme-Corp.com, sales@status.acme-corp.com, jane@acme-corp.com\n"
        "+49 (30) 9018200, +49 30 1234567\n"
        "DE89370400440532013000, 4111-1111-1111-1111\n"
    )
    allowed = Allowed(
        (
            "support@acme-corp.com",
            "*@status.acme-corp.com",
            "+49 30 901820-0",
            "DE89 3704 0044 0532 0130 00",
            "4111 1111 1111 1111",
        )
    )
    assert findings(text, allowed) == [
        f"a.md:7:52: HB404 (warning) e-mail address j…@acme-corp.com{TAIL}",
        f"a.md:8:19: HB404 (warning) phone number …67{TAIL}",
    ]


def test_the_allow_list_is_read_from_the_configuration(make_library: MakeLibrary) -> None:
    docs = {"a.md": FM + "Mail support@acme-corp.com or jane@acme-corp.com.\n"}
    config = make_library(docs, pii={"allow": ["support@acme-corp.com"]})
    run = run_cli("check", "--config", str(config), "--format", "github")
    [line] = run.stdout.splitlines()  # the path is relative to the working directory
    assert line.startswith("::warning file=")
    assert line.endswith(
        "/docs/a.md,line=7,col=31,title=HB404::e-mail address j…@acme-corp.com" + TAIL
    )


@pytest.mark.parametrize(
    ("pii", "problem"),
    [
        (["a@b.com"], "handbook.pii: must be a mapping with an `allow` list"),
        ({"allow": "a@b.com"}, "handbook.pii.allow: must be a list of e-mail addresses"),
        ({"allow": ["*"]}, "handbook.pii.allow: '*' would allow everything; name what to allow"),
        ({"deny": []}, "handbook.pii.deny: unknown key; expected: allow"),
    ],
)
def test_a_wrong_allow_list_is_a_configuration_error(
    make_library: MakeLibrary, pii: object, problem: str
) -> None:
    config = make_library({"a.md": FM + "Text.\n"}, pii=pii)
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 2
    assert f"HB001 {problem}" in run.stdout
