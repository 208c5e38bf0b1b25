"""HB405: secrets in URLs — `https://user:password@host/…`, `postgresql://app:s3cret@db/…`,
`ftp://bob:pw@files…`, and an access token written as a URL's user name
(`https://ghp_…@github.com/…`).

A password in a doc is published with it: to every reader of the site, every agent, every
mirror of the bundle and the search index, and the repository's history keeps it after
it is deleted. So the finding says to remove it and to rotate it, and never shows it: the
message masks the secret (`https://deploy:***@ci.acme.com`), since findings are copied
into build logs and pull-request annotations.

Not findings: placeholders (`${PASSWORD}`, `<password>`, `{{ password }}`, `%(pw)s`,
`***`, `xxx`, `…`, and the words `password`, `pass`, `secret`, `changeme` and the like),
hosts reserved for examples (RFC 2606 and 6761: `example.com` and the `.example`, `.test`,
`.invalid`, `.localhost` names) and the loopback host (`localhost`, `127.0.0.1`,
`[::1]`), where a documented password opens nothing anyone else can reach. A user name
alone is a token only when it looks like one (20 characters or more, letters and digits,
or a token prefix such as `ghp_` or `glpat-`); `ssh://git@host` is a user. Code spans and
fences are read like prose: a connection string in an example configuration is still
published.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import unquote

from .. import rules
from ..findings import Finding
from ..read.parse import Doc
from .personal_data import EXAMPLE_DOMAINS, EXAMPLE_TLDS, strings

_USERINFO_URL = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?P<user>[^\s/?#@:\[\]]*)(?::(?P<password>[^\s/?#@]*))?"
    r"@(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s/?#@:\[\]]+)"
)
_PLACEHOLDER = re.compile(
    r"\$\{?[\w.-]*\}?|<[^<>]*>|\{\{?[^{}]*\}?\}|%\(\w+\)s|\[[^\]]*\]|([*x.…_-])\1*",
    re.IGNORECASE,
)
PLACEHOLDER_WORDS = frozenset(
    {"password", "passwd", "pass", "pw", "pwd", "secret", "changeme", "token", "mypassword"}
    | {"yourpassword", "your_password", "your-password", "pa55word", "p4ssw0rd", "redacted"}
)
"""Passwords that say they are not one."""
LOOPBACK = frozenset({"localhost", "127.0.0.1", "[::1]", "0.0.0.0"})
TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "github_pat_", "glpat-", "xoxb-", "xoxp-")
"""Prefixes of the access tokens of GitHub, GitLab and Slack."""


class Secret(NamedTuple):
    start: int
    end: int
    variant: str
    """password or token (the rule's message variants)."""
    shown: str
    """The URL's start, the secret masked."""


def check(doc: Doc) -> list[Finding]:
    """HB405 findings of the doc's frontmatter values (at the value) and its body (at the
    URL's first character)."""
    out = []
    for name, value in doc.meta.items():
        at = doc.value_at(name)
        for text in strings(value):
            out += [_finding(doc.path, at.line, at.col, s) for s in scan(text)]
    if "@" in doc.body:
        for number, line in enumerate(doc.body.split("\n")):
            for secret in scan(line) if "@" in line else ():
                out.append(_finding(doc.path, doc.body_line + number, secret.start + 1, secret))
    return out


def check_comments(doc: Doc) -> Iterator[Finding]:
    """HB405 findings of the HTML comments taken out of the body: agents never get them,
    but the site's pages and the repository still hold them (at their file lines)."""
    for comment in doc.comments:
        for secret in scan(comment.text):
            line, col = comment.at(secret.start)
            yield _finding(doc.path, line, col, secret)


def _finding(path: str, line: int, col: int, secret: Secret) -> Finding:
    return rules.CREDENTIALS_IN_URL.at(path, line, col, variant=secret.variant, shown=secret.shown)


def scan(text: str) -> Iterator[Secret]:
    """The secrets in the URLs of `text` that are not placeholders or examples."""
    for match in _USERINFO_URL.finditer(text):
        host = match["host"].lower()
        if _reserved(host):
            continue
        user, password = match["user"], match["password"]
        start = f"{match['scheme']}://"
        if password is not None:
            if _placeholder(password):
                continue
            yield Secret(match.start(), match.end(), "password", f"{start}{user}:***@{host}")
        elif _token(user):
            yield Secret(match.start(), match.end(), "token", f"{start}***@{host}")


def _reserved(host: str) -> bool:
    if host in LOOPBACK:
        return True
    labels = host.rstrip(".").split(".")
    if labels[-1] in EXAMPLE_TLDS:
        return True
    return any(host == d or host.endswith("." + d) for d in EXAMPLE_DOMAINS)


def _placeholder(password: str) -> bool:
    word = unquote(password).strip()
    return not word or word.lower() in PLACEHOLDER_WORDS or bool(_PLACEHOLDER.fullmatch(word))


def _token(user: str) -> bool:
    if user.lower().startswith(TOKEN_PREFIXES):
        return True
    return len(user) >= 20 and any(c.isdigit() for c in user) and any(c.isalpha() for c in user)
