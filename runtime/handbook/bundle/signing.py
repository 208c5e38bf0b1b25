"""Ed25519 signatures over canonical JSON, with keys checked before they are trusted.

The signing input is domain-separated, ``uint16be(len(tag)) || tag || canonical(payload)``,
so a signature made for one purpose (tag) can never be replayed as another. Key ids are
the hex sha256 of the raw 32-byte public key; signatures and keys travel as standard
padded base64, and any other encoding of the same bytes is refused.

A trusted key is validated when loaded: exactly 32 bytes, a canonical encoding, and not
one of the 14 low-order encodings. With `cryptography`, a low-order trusted key lets the
signature "identity point ‖ 32 zero bytes" verify for every message, so such keys must
never get as far as verification. Verification itself is `cryptography`'s (OpenSSL),
which rejects non-canonical S; there is no pure-Python fallback.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..errors import KeyFormatError, SignatureError
from . import canonical

MANIFEST_TAG = "handbook/v2/manifest"
"""The manifest's signing tag names the format's major version: a signature made for one
major version's manifest is never valid for another's, whatever a reader checks first."""
KEY_PREFIX = "ed25519:"
TRUSTED_KEYS_ENV = "HANDBOOK_TRUSTED_KEYS"
SIGNING_KEY_ENV = "HANDBOOK_SIGNING_KEY"

_P = 2**255 - 19
# The encodings of the points of order 1, 2, 4 and 8 (libsodium's blocklist), compared
# with the sign bit cleared: 7 values x 2 signs = the 14 low-order encodings.
_LOW_ORDER = {
    bytes(32),
    bytes([1]) + bytes(31),
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    (_P - 1).to_bytes(32, "little"),
    _P.to_bytes(32, "little"),
    (_P + 1).to_bytes(32, "little"),
}


def b64decode_strict(text: str, what: str) -> bytes:
    """Standard padded base64, and only the one encoding of the bytes."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError(f"{what} is not standard padded base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise ValueError(f"{what} is not the canonical base64 encoding of its bytes")
    return raw


def b64encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def keyid(raw_public: bytes) -> str:
    return hashlib.sha256(raw_public).hexdigest()


def signing_input(tag: str, payload: Any, *, encoded: bytes | None = None) -> bytes:
    """``uint16be(len(tag)) || tag || canonical(payload)``; `encoded` is the payload's
    canonical bytes when the caller already has them (a parsed manifest does)."""
    encoded_tag = tag.encode("ascii")
    body = encoded if encoded is not None else canonical.dumps(payload)
    return len(encoded_tag).to_bytes(2, "big") + encoded_tag + body


class PublicKey(NamedTuple):
    """A validated Ed25519 public key that may be trusted."""

    raw: bytes

    @classmethod
    def parse(cls, text: str) -> PublicKey:
        """From ``ed25519:<base64 of the raw 32 bytes>``; raises KeyFormatError."""
        text = text.strip()
        if not text.startswith(KEY_PREFIX):
            raise KeyFormatError(f"public key {text[:20]!r}… must look like ed25519:<base64>")
        try:
            raw = b64decode_strict(text[len(KEY_PREFIX) :], "public key")
        except ValueError as exc:
            raise KeyFormatError(str(exc)) from None
        return cls.from_raw(raw)

    @classmethod
    def from_raw(cls, raw: bytes) -> PublicKey:
        if len(raw) != 32:
            raise KeyFormatError(f"public key has {len(raw)} bytes; Ed25519 keys have 32")
        cleared = raw[:31] + bytes([raw[31] & 0x7F])
        if int.from_bytes(cleared, "little") >= _P:
            raise KeyFormatError("public key is not a canonical encoding (y >= p)")
        if cleared in _LOW_ORDER:
            raise KeyFormatError(
                "public key is a low-order point; it would accept forged signatures"
            )
        return cls(raw)

    @property
    def keyid(self) -> str:
        return keyid(self.raw)

    def __str__(self) -> str:
        return KEY_PREFIX + b64encode(self.raw)

    def verifies(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


def trusted_keys(keys: Iterable[str | PublicKey] = (), *, env: bool = True) -> list[PublicKey]:
    """The given keys plus those in $HANDBOOK_TRUSTED_KEYS, parsed, each distinct key once."""
    found: dict[bytes, PublicKey] = {}
    items = list(keys)
    if env:
        items += [k for k in os.environ.get(TRUSTED_KEYS_ENV, "").split(",") if k.strip()]
    for item in items:
        key = item if isinstance(item, PublicKey) else PublicKey.parse(item)
        found.setdefault(key.raw, key)
    return list(found.values())


# -- private keys (build side uses these; kept here so signed bytes have one producer) ----
# `cryptography`'s serialization module is imported where keys are read or written, not
# at the top: it costs a reader's cold start 16 ms and verifying never needs it.


def generate_private_key() -> tuple[bytes, PublicKey]:
    """A new key as PKCS#8 PEM bytes, and its public key."""
    from cryptography.hazmat.primitives import serialization

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem, public_key_of(private)


def load_private_key(pem: bytes | str, what: str = "signing key") -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFormatError(f"{what} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFormatError(f"{what} is not an Ed25519 key")
    return key


def public_key_of(private: Ed25519PrivateKey) -> PublicKey:
    return PublicKey.from_raw(private.public_key().public_bytes_raw())


def sign(private: Ed25519PrivateKey, tag: str, payload: Any) -> dict[str, str]:
    """A signature entry ``{"keyid", "sig"}`` over the payload under `tag`."""
    return {
        "keyid": public_key_of(private).keyid,
        "sig": b64encode(private.sign(signing_input(tag, payload))),
    }


# -- verification ----------------------------------------------------------------------------


def verify(
    signatures: Sequence[dict[str, str]],
    payload: Any,
    keys: Sequence[PublicKey],
    *,
    tag: str = MANIFEST_TAG,
    threshold: int = 1,
    encoded: bytes | None = None,
) -> list[str]:
    """The key ids of the distinct trusted keys whose signatures verify; raises
    SignatureError when there are fewer than `threshold`. A key counts once however
    many entries name it, and one signature value counts once whatever keyid it claims."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    by_id = {key.keyid: key for key in keys}
    message = signing_input(tag, payload, encoded=encoded)
    good: list[str] = []
    seen_sigs: set[bytes] = set()
    for entry in signatures:
        key = by_id.get(entry["keyid"])
        if key is None or key.keyid in good:
            continue
        try:
            sig = b64decode_strict(entry["sig"], "signature")
        except ValueError:
            continue
        if len(sig) != 64 or sig in seen_sigs:
            continue
        if key.verifies(sig, message):
            good.append(key.keyid)
            seen_sigs.add(sig)
    if len(good) < threshold:
        if not signatures:
            raise SignatureError(
                "the bundle is unsigned; sign it (handbook build --key) or allow unsigned bundles"
            )
        if not by_id:
            raise SignatureError(
                "no trusted keys were given; pass --key ed25519:… or set HANDBOOK_TRUSTED_KEYS"
            )
        signed_by = ", ".join(e["keyid"][:16] for e in signatures)
        raise SignatureError(
            f"{len(good)} valid signature(s) by trusted keys, {threshold} required "
            f"(signed by key ids {signed_by}; trusted: {', '.join(k[:16] for k in by_id)})"
        )
    return good
