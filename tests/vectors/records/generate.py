"""Regenerate the golden record vectors in this folder:
`python tests/vectors/records/generate.py`.

Each case is a review or invalidation signed with a key derived from a fixed seed: the
seed, the record's fields, the exact signing input (hex), the record id (sha256 of the
signing input), the Ed25519 signature (hex) and the file the record is kept in. Ed25519
is deterministic, so the files only change when the record format does;
test_record_vectors.py recomputes every value from the seed and the fields and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.signing import b64decode_strict, public_key_of, signing_input
from handbook.pedigree.records import TAGS, Invalidation, Record, Review, sign, to_bytes, to_dict

HERE = Path(__file__).resolve().parent
SEED = hashlib.sha256(b"handbook golden reviewer key - never use for real").digest()
KEYID = public_key_of(Ed25519PrivateKey.from_private_bytes(SEED)).keyid
REVISION = hashlib.sha256(b"golden doc revision").hexdigest()

CASES: list[tuple[str, Record]] = [
    (
        "review of a whole doc",
        Review(
            "",
            "golden",
            "device.acme.ac200",
            REVISION,
            "approve",
            "Checked on a bench unit.",
            KEYID,
            1_772_355_600,
        ),
    ),
    (
        "review of one section, with language, evidence and non-ASCII basis",
        Review(
            "",
            "golden",
            "device.acme.ac200",
            REVISION,
            "contradict",
            "Registre 40001 : l\u2019ordre des mots est inversé (firmware ≥ 2.1).",
            KEYID,
            1_772_442_000,
            "register-map",
            "fr",
            ("https://example.com/tickets/17", "urn:test-run:2026-03-02"),
        ),
    ),
    (
        "invalidation",
        Invalidation(
            "", "golden", "urn:device:acme-ac200:firmware", 1_772_528_400, KEYID, 1_772_532_000
        ),
    ),
]


def case(name: str, record: Record) -> dict[str, Any]:
    signed = sign(record, Ed25519PrivateKey.from_private_bytes(SEED))
    data = to_dict(signed)
    message = signing_input(TAGS[data["type"]], data["payload"])
    return {
        "name": name,
        "seed": SEED.hex(),
        "public_key": str(public_key_of(Ed25519PrivateKey.from_private_bytes(SEED))),
        "keyid": KEYID,
        "tag": TAGS[data["type"]],
        "type": data["type"],
        "payload": data["payload"],
        "signing_input": message.hex(),
        "id": signed.id,
        "signature": b64decode_strict(signed.signature, "signature").hex(),
        "file": to_bytes(signed).decode("utf-8"),
    }


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = [case(name, record) for name, record in CASES]
    (out / "records.json").write_text(
        json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
