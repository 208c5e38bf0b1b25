"""Semantic versions (SemVer 2.0.0): the one parser the build's version rule and the
remote reader's update check share, so the reader compares exactly what the build lets
through and refuses the rest.

A version is MAJOR.MINOR.PATCH, optionally `-` dot-separated pre-release identifiers
and `+` dot-separated build metadata: identifiers non-empty, of [0-9A-Za-z-], numbers
(and numeric pre-release identifiers) without leading zeros. Precedence is the
specification's §11: numbers numerically, a pre-release below its release, pre-release
identifiers left to right (numeric ones numerically and below alphanumeric ones,
alphanumeric ones in ASCII order, a shorter set below a longer one it begins), build
metadata ignored. Versions of equal precedence are the same version: `1.0.0+b2` is
`1.0.0`, and so must be the same bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

_NUMBER = r"0|[1-9]\d*"
_PRE_ID = rf"(?:{_NUMBER}|\d*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = r"[0-9A-Za-z-]+"
_PATTERN = re.compile(
    rf"({_NUMBER})\.({_NUMBER})\.({_NUMBER})"
    rf"(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?"
    rf"(?:\+({_BUILD_ID}(?:\.{_BUILD_ID})*))?",
    re.ASCII,
)
MAX_LENGTH = 256
"""The longest version read: far beyond any real one, and short of what makes `int()`
slow or refuse (a hostile manifest's version is parsed too)."""


@total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A parsed version; ordered, equal and hashed by precedence (build metadata aside)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        """The §11 precedence as a tuple (a release ranks above its pre-releases)."""
        identifiers = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return self.major, self.minor, self.patch, 0 if self.prerelease else 1, identifiers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.key == other.key

    def __lt__(self, other: Version) -> bool:
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        text += f"-{'.'.join(self.prerelease)}" if self.prerelease else ""
        return text + (f"+{'.'.join(self.build)}" if self.build else "")


def parse(text: str) -> Version:
    """`text` as a `Version`; a `ValueError` naming it when it is not one (`1.0`, `1.x.0`,
    `01.0.0`, `1.0.0-01`, `1.0.0-`, `1.0.0+a..b` are all refused)."""
    match = _PATTERN.fullmatch(text) if len(text) <= MAX_LENGTH else None
    if match is None:
        raise ValueError(
            f"{text[:MAX_LENGTH]!r} is not a semantic version like 1.2.0 or 2.0.0-rc.1 "
            "(three numbers without leading zeros, then optional -pre-release and +build "
            f"identifiers, each non-empty, of letters, digits and hyphens; at most "
            f"{MAX_LENGTH} characters)"
        )
    major, minor, patch, pre, build = match.groups()
    return Version(
        int(major),
        int(minor),
        int(patch),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )
