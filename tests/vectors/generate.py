"""Regenerate the golden vectors in this folder: `python tests/vectors/generate.py`.

Everything is fixed — the key is derived from a constant seed, the payloads are
literals, Ed25519 signatures are deterministic — so the files only change when the
byte format does. test_vectors.py regenerates them into a temporary folder and
compares byte for byte; a difference is a format change, to be made on purpose.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle import canonical, id_table
from handbook.bundle.chunks import ChunkHasher
from handbook.bundle.chunks import dumps as chunk_file
from handbook.bundle.manifest import FileEntry, Manifest, Signed
from handbook.bundle.signing import MANIFEST_TAG, public_key_of, sign, signing_input

HERE = Path(__file__).resolve().parent
SEED = hashlib.sha256(b"handbook golden test key - never use for real").digest()

CANONICAL_CASES: list[tuple[str, object]] = [
    ("empty object", {}),
    (
        "key order is by UTF-16 code unit",
        {"b": 1, "a": 2, "\ufb01": 3, "\U0001f680": 4, "A": 5, "": 6},
    ),
    (
        "escapes",
        {"s": 'quote " backslash \\ newline \n tab \t nul \u0000 unit sep \u001f del \u007f'},
    ),
    ("non-ASCII stays UTF-8", {"s": "café 日本 🚀 \u2028"}),
    ("integers", [0, 1, -1, 2**53 - 1, -(2**53 - 1)]),
    ("literals and nesting", {"t": True, "f": False, "n": None, "l": [[], [{}], ""]}),
]


CHUNKED_SAMPLE = (bytes(range(256)) * 10)[:2500]
"""The file chunks.bin gives chunk hashes of (as search.bin): two 1 KiB chunks and a
part one."""
CHUNK_SIZE = 1024


def chunks_vector() -> bytes:
    """chunks.bin for `CHUNKED_SAMPLE` alone, in 1 KiB chunks."""
    hasher = ChunkHasher(CHUNK_SIZE)
    hasher.update(CHUNKED_SAMPLE)
    return chunk_file({"search.bin": hasher.chunked()})


IDS_SAMPLE = ["Device.ACME.ac-200", "device.acme.ac200", "guide.\u00e9_x", "guide.\u00e9_x", "z.a"]
"""The ids ids.bin squeezes and orders: case, punctuation, a non-ASCII letter, an id
twice (two languages), ties in both orders."""
IDS_CATALOG = b'{"docs":[],"library":{}}'


def ids_vector() -> bytes:
    """ids.bin for `IDS_SAMPLE`, written for the catalog `IDS_CATALOG`."""
    return id_table.dumps(IDS_SAMPLE, hashlib.sha256(IDS_CATALOG).digest())


def test_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(SEED)


def manifest_payload() -> Signed:
    """A handbook/v2 manifest: the catalog is listed, the content file it names is not
    (the catalog entry gives its sha256, in its name, and its size)."""
    search = b"HBSEARCH"
    catalog = b'{"docs":[],"library":{}}'
    return Signed(
        library="golden",
        version="1.0.0",
        built_at="2026-01-31T12:00:00Z",
        files={
            "catalog.json": FileEntry(hashlib.sha256(catalog).hexdigest(), len(catalog)),
            "search.bin": FileEntry(hashlib.sha256(search).hexdigest(), len(search)),
        },
        docs=1,
    )


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    key = test_key()
    public = public_key_of(key)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (out / "test-key.pem").write_bytes(pem)
    (out / "test-key.pub").write_text(f"{public}\n{public.keyid}\n")
    cases = [
        {"name": name, "canonical": canonical.dumps(value).decode("utf-8")}
        for name, value in CANONICAL_CASES
    ]
    (out / "canonical.json").write_text(
        json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    signed = manifest_payload()
    (out / "signing-input.hex").write_text(
        signing_input(MANIFEST_TAG, signed.to_dict()).hex() + "\n"
    )
    manifest = Manifest(signed, (sign(key, MANIFEST_TAG, signed.to_dict()),))
    (out / "manifest.json").write_bytes(manifest.to_bytes())
    (out / "chunks.bin").write_bytes(chunks_vector())
    (out / "ids.bin").write_bytes(ids_vector())


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
