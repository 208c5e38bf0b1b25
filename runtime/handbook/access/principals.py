"""Who is asking: bearer tokens, stored only as their sha256, mapped to principals.

A principal is a name the operator gives a caller ("ci", "support-bot", "alice"). The
server resolves each request's bearer token to one; later features attach to it what it
may read (audiences) and write (attribution of agent records). Tokens are never stored,
logged or compared as text: the tokens file holds ``<principal> sha256:<hex>`` lines,
and a presented token is hashed and compared in constant time.

The tokens file (``--tokens FILE`` or ``$HANDBOOK_TOKENS_FILE``)::

    # principal   digest of its token                                              audience
    ci            sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    support-bot   sha256:…  audience=staff

`handbook token add NAME --tokens FILE [--audience A]` makes a new random token, appends
its digest, and prints the token once. A principal reads the bundle of its audience
(`public` when none is given), and only that one (`handbook.libraries.audiences`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from ..errors import HandbookError

TOKENS_FILE_ENV = "HANDBOOK_TOKENS_FILE"
PUBLIC = "public"
"""The audience of a principal the tokens file gives none, and of a bundle without one."""
_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.@-]{0,63})\s+sha256:(?P<digest>[0-9a-f]{64})"
    r"(?:\s+audience=(?P<audience>[a-z][a-z0-9_-]*(?::[a-z0-9][a-z0-9_.-]*)?))?$"
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_AUDIENCE = re.compile(r"^[a-z][a-z0-9_-]*(:[a-z0-9][a-z0-9_.-]*)?$")


class TokensFileError(HandbookError):
    """The tokens file cannot be used; the message names the file and the line."""


class Principals:
    """Bearer token digests -> principal names."""

    def __init__(
        self, digests: Mapping[str, str], audiences: Mapping[str, str] | None = None
    ) -> None:
        self._digests = dict(digests)
        self._audiences = dict(audiences or {})

    def audience_of(self, principal: str | None) -> str:
        """The audience whose bundle a principal reads (`audience=` in the tokens file):
        `public` unless the operator says otherwise."""
        return self._audiences.get(principal or "", PUBLIC)

    @classmethod
    def single(cls, token: str, name: str = "token") -> Principals:
        """One token (``--token``), for the principal `name`."""
        return cls({_digest(token): name})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Principals:
        digests: dict[str, str] = {}
        audiences: dict[str, str] = {}
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokensFileError(f"{path}: cannot read the tokens file ({exc})") from None
        names: set[str] = set()
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            match = _LINE.fullmatch(" ".join(line.split()))
            if match is None:
                raise TokensFileError(
                    f"{path}:{number}: not `<principal> sha256:<64 hex> [audience=NAME]`; "
                    "add tokens with `handbook token add NAME --tokens FILE`"
                )
            if match["name"] in names:
                raise TokensFileError(
                    f"{path}:{number}: principal {match['name']!r} is listed twice"
                )
            names.add(match["name"])
            digests[match["digest"]] = match["name"]
            if match["audience"]:
                audiences[match["name"]] = match["audience"]
        return cls(digests, audiences)

    def __bool__(self) -> bool:
        return bool(self._digests)

    @property
    def names(self) -> list[str]:
        return sorted(self._digests.values())

    def who(self, token: bytes | str) -> str | None:
        """The principal of a presented token, or None. Every digest is compared, in
        constant time, whichever matches."""
        presented = _digest(token)
        found = None
        for digest, name in self._digests.items():
            if hmac.compare_digest(digest, presented):
                found = name
        return found


def add_token(path: str | os.PathLike[str], name: str, audience: str | None = None) -> str:
    """Append a new principal with a fresh random token to the tokens file (created
    with mode 0600); the token, which is stored nowhere."""
    if not _NAME.fullmatch(name):
        raise TokensFileError(f"{name!r} is not a principal name (letters, digits, _ . @ -)")
    if audience is not None and not _AUDIENCE.fullmatch(audience):
        raise TokensFileError(f"{audience!r} is not an audience name like staff or customer:acme")
    target = Path(path)
    if target.exists() and name in Principals.load(target).names:
        raise TokensFileError(f"{target}: principal {name!r} already has a token")
    token = secrets.token_urlsafe(32)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(
            f"{name} sha256:{_digest(token)}" + (f" audience={audience}" if audience else "") + "\n"
        )
    return token


def _digest(token: bytes | str) -> str:
    data = token.encode("utf-8", "surrogateescape") if isinstance(token, str) else token
    return hashlib.sha256(data).hexdigest()
