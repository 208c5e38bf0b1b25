"""`TrustPolicy`: whom a reader trusts, decided once and applied the same way to a
bundle folder and to a bundle fetched from a URL.

It holds the trusted keys (given, plus $HANDBOOK_TRUSTED_KEYS), how many distinct
signatures are required, whether an unsigned bundle is acceptable, which library the
signature must name, and the settings of remote opening: where the version high-water
mark lives, whether an older version may be accepted on purpose, and whether plain http
and redirects to other hosts are allowed (`handbook.bundle.web`). An API may take a
policy or the keywords it is made from (`TrustOptions`), never both (`chosen`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ..errors import LibraryMismatchError
from .manifest import Manifest
from .signing import PublicKey, trusted_keys, verify


class TrustOptions(TypedDict, total=False):
    """The keywords of `TrustPolicy.of`, for an API that takes them instead of a policy
    (`Library.open`)."""

    threshold: int
    allow_unsigned: bool
    expect_library: str | None
    allow_rollback: bool
    state_dir: str | os.PathLike[str] | None
    allow_http: bool
    redirect_hosts: Iterable[str]
    expect_audience: str | None


@dataclass(frozen=True)
class TrustPolicy:
    keys: tuple[PublicKey, ...] = ()
    threshold: int = 1
    allow_unsigned: bool = False
    """Accept a bundle without signatures (a signed one is still verified when keys are
    given). Files' sizes and hashes are always checked."""
    expect_library: str | None = None
    """The library name the signature must cover (a mirror cannot swap libraries)."""
    allow_rollback: bool = False
    """Accept a remote version below the highest already accepted."""
    state_dir: Path | None = None
    """Where the version high-water mark lives (`handbook.bundle.highwater.default_state_dir`)."""
    allow_http: bool = False
    """Fetch a remote bundle over plain http from a host that is not loopback."""
    redirect_hosts: frozenset[str] = frozenset()
    """Hosts a remote bundle's server may redirect to besides its own (a CDN)."""
    expect_audience: str | None = None
    """The audience the signature must cover: one audience's bundle is never accepted
    as another's (a bundle without an audience is refused too)."""

    @classmethod
    def of(
        cls,
        keys: Iterable[str | PublicKey] = (),
        *,
        threshold: int = 1,
        allow_unsigned: bool = False,
        expect_library: str | None = None,
        allow_rollback: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
        allow_http: bool = False,
        redirect_hosts: Iterable[str] = (),
        expect_audience: str | None = None,
    ) -> TrustPolicy:
        """A policy from key strings (parsed now: a malformed key is a `KeyFormatError`
        here, not later) and the environment's keys."""
        return cls(
            tuple(trusted_keys(keys)),
            threshold,
            allow_unsigned,
            expect_library,
            allow_rollback,
            Path(state_dir) if state_dir is not None else None,
            allow_http,
            frozenset(redirect_hosts),
            expect_audience,
        )

    @classmethod
    def chosen(
        cls,
        trust: TrustPolicy | None,
        keys: Iterable[str | PublicKey] | None,
        options: TrustOptions,
    ) -> TrustPolicy:
        """`trust`, or the policy `of(keys, **options)`, for an API that takes either: a
        caller giving both is refused (`TypeError`) rather than having one silently win."""
        if trust is None:
            return cls.of(keys or (), **options)
        given = ["trusted_keys"] * (keys is not None) + sorted(options)
        if given:
            raise TypeError(
                f"trust= is a whole TrustPolicy; give it or {', '.join(given)}, not both "
                "(put them in the policy: TrustPolicy.of(keys, ...))"
            )
        return trust

    def check(self, manifest: Manifest, where: str | os.PathLike[str] = "") -> tuple[str, ...]:
        """The key ids whose signatures verify (empty for an accepted unsigned bundle);
        raises `SignatureError` or `LibraryMismatchError` when the manifest is refused."""
        signed_by: list[str] = []
        if not (self.allow_unsigned and (not manifest.signatures or not self.keys)):
            signed_by = verify(
                manifest.signatures,
                manifest.signed,
                list(self.keys),
                threshold=self.threshold,
                encoded=manifest.canonical_signed(),
            )
        library = manifest.signed.library
        if self.expect_library is not None and library != self.expect_library:
            raise LibraryMismatchError(
                f"{where}: signed for library {library!r}, not {self.expect_library!r}"
            )
        audience = manifest.signed.audience
        if self.expect_audience is not None and audience != self.expect_audience:
            raise LibraryMismatchError(
                f"{where}: signed for audience {audience!r}, not {self.expect_audience!r}"
            )
        return tuple(signed_by)
