"""Reviewers for the pedigree tests: fixed Ed25519 keys derived from their names (never
for real use), the `reviews:` option that declares them, and signed records made
without the CLI, for tests that drive the runtime or the checker directly."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.manifest import utc_seconds
from handbook.bundle.signing import public_key_of
from handbook.pedigree.records import Invalidation, Review, sign

NAMES = ("alice", "bob", "carol", "dave")

T0 = utc_seconds("2026-03-01T09:00:00Z") or 0
"""The time the pedigree tests start at; every clock and record is relative to it."""
DAY = 86_400


def private(name: str) -> Ed25519PrivateKey:
    """The test key of reviewer `name`, the same on every run."""
    seed = hashlib.sha256(f"handbook test reviewer {name} - never use for real".encode()).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def public(name: str) -> str:
    return str(public_key_of(private(name)))


def keyid(name: str) -> str:
    return public_key_of(private(name)).keyid


def pem(name: str) -> bytes:
    return private(name).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def key_file(folder: Path, name: str) -> Path:
    """`name`'s private key written as `handbook keygen` writes one."""
    path = folder / f"{name}.pem"
    path.write_bytes(pem(name))
    return path


def reviews_option(names: tuple[str, ...] = ("alice", "bob", "carol"), **policy: Any) -> Any:
    """The `reviews:` setting declaring `names`; `policy` adds the other keys as written."""
    return {"reviewers": {name: public(name) for name in names}, **policy}


def review(
    name: str,
    doc: str,
    revision: str,
    verdict: str = "approve",
    *,
    at: int = T0,
    basis: str = "checked against the device",
    library: str = "test",
    **fields: Any,
) -> Review:
    """A review signed by `name` (fields: section, lang, evidence)."""
    record = Review(
        "",
        library,
        doc,
        revision,
        verdict,
        basis,
        keyid(name),
        at,
        **fields,  # type: ignore[arg-type]
    )
    return sign(record, private(name))  # type: ignore[return-value]


def invalidation(
    name: str, about: str, *, changed_at: int, at: int | None = None, library: str = "test"
) -> Invalidation:
    record = Invalidation(
        "", library, about, changed_at, keyid(name), changed_at if at is None else at
    )
    return sign(record, private(name))  # type: ignore[return-value]
