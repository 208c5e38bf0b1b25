"""HB405 credentials-in-url: a password in a URL, or a token as its user name, is an
error at the URL, the secret masked in the message; placeholders, example and loopback
hosts are not findings; and HB404 no longer takes `git@host` or a URL's user for mail."""

from __future__ import annotations

import pytest
from conftest import MakeLibrary

from handbook_build import load_config
from handbook_build.checks.credentials import check, scan
from handbook_build.checks.personal_data import scan as personal_data
from handbook_build.pipeline import load
from handbook_build.read.parse import parse
from handbook_build.read.source import Text

FM = "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n---\n"
TAIL = (
    ": everyone who reads the docs, the site, the bundle or the search index gets it; remove "
    "it from the URL (write a placeholder such as `${PASSWORD}`) and rotate it, since the "
    "repository's history keeps it"
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://deploy:hunter2@ci.acme.com/x", "https://deploy:***@ci.acme.com"),
        (
            "postgresql://app:s3cr%40t@db.internal.net:5432/app",
            "postgresql://app:***@db.internal.net",
        ),
        ("ftp://backup:Summer2026!@files.acme.org/db.gz", "ftp://backup:***@files.acme.org"),
        ("redis://:Sup3rS3cret@cache.acme.io:6379", "redis://:***@cache.acme.io"),
        (
            "mongodb+srv://admin:Tr0ub4dor@cluster0.mongodb.net/",
            "mongodb+srv://admin:***@cluster0.mongodb.net",
        ),
        (
            "(https://x-access-token:ghp_abc123def456@github.com/o/r)",
            "https://x-access-token:***@github.com",
        ),
        ("https://ghp_abcdefghijklmnop1234@github.com/o/r", "https://***@github.com"),
        ("https://glpat-Ab12Cd34@gitlab.com/o/r", "https://***@gitlab.com"),
    ],
)
def test_secrets_are_found_and_masked(text: str, shown: str) -> None:
    [secret] = scan(text)
    assert secret.shown == shown
    assert "hunter2" not in secret.shown and "s3cr" not in secret.shown


@pytest.mark.parametrize(
    "text",
    [
        "git+ssh://git@github.com/org/repo.git",
        "ssh://git@gitlab.com/acme/app",
        "git@github.com:acme/app.git",
        "https://user:${PASSWORD}@acme.com/",
        "https://user:<password>@acme.com/",
        "https://user:{{ password }}@acme.com/",
        "https://user:%(pw)s@acme.com/",
        "https://user:***@acme.com/",
        "https://user:xxxx@acme.com/",
        "https://user:password@acme.com/",
        "https://user:changeme@acme.com/",
        "postgres://postgres:hunter2@localhost/app",
        "postgres://app:hunter2@127.0.0.1:5432/app",
        "https://admin:hunter2@api.example.com/",
        "https://admin:hunter2@db.acme.test/",
        "https://jane@acme.com/profile",
        "mailto:jane:x@acme.com",
        "a:b@c (no scheme)",
        "",
    ],
)
def test_placeholders_examples_and_users_are_not_findings(text: str) -> None:
    assert list(scan(text)) == []


def test_findings_are_placed_in_body_frontmatter_fence_and_comment() -> None:
    text = (
        "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n"
        "mirror: https://deploy:hunter2@mirror.acme.com/simple\n---\n"
        "Clone https://x-access-token:ghp_abc123def456@github.com/o/r.git now.\n"
        "```yaml\ndb: postgresql://app:s3cret@db.acme.com/app\n```\n"
        "<!-- staging: redis://:n0t-in-the-bundle@cache.acme.com -->\n"
    )
    doc, problems = parse(Text("a.md", text))
    assert doc is not None and problems == []
    assert "n0t-in-the-bundle" not in doc.body  # agents never get it
    found = [str(f) for f in check(doc)]
    assert found == [
        f"a.md:6:9: HB405 URL https://deploy:***@mirror.acme.com holds a password{TAIL}",
        f"a.md:8:7: HB405 URL https://x-access-token:***@github.com holds a password{TAIL}",
        f"a.md:10:5: HB405 URL postgresql://app:***@db.acme.com holds a password{TAIL}",
    ]
    assert all("hunter2" not in line and "s3cret" not in line for line in found)


def test_a_secret_in_a_comment_is_found_at_its_line(make_library: MakeLibrary) -> None:
    body = FM + "Text.\n\n<!--\n  staging:\n  redis://:n0t-in-the-bundle@cache.acme.com\n-->\n"
    config = load_config(make_library({"a.md": body}))
    _, findings = load(config, "a.md")
    assert [(f.code, f.line, f.col) for f in findings] == [("HB405", 11, 3)]


def test_personal_data_leaves_git_and_url_users_alone() -> None:
    for text in (
        "pip install git+ssh://git@github.com/org/repo.git",
        "ssh://git@gitlab.com/x",
        "git@github.com",
        "https://user:password@host.com/x",
        "see https://jane@acme.com/path",
    ):
        assert personal_data(text) == [], text
    assert [f.key for f in personal_data("mailto:jane@acme.com, git@x.com, max@acme.com")] == [
        "jane@acme.com",
        "max@acme.com",
    ]
