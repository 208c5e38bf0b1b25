"""Golden vectors for review and invalidation records: from the seed and the fields
alone, the signing input, the record id and the signature are recomputed and compared
with the committed values, and the committed record files read back to the same id and
verify. A difference is a change of the record format, to be made on purpose."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle import canonical
from handbook.bundle.signing import PublicKey
from handbook.pedigree.records import from_dict, record_id, verify

VECTORS = ROOT / "tests" / "vectors" / "records"
CASES: list[dict[str, Any]] = json.loads((VECTORS / "records.json").read_text(encoding="utf-8"))
REGENERATE = "python tests/vectors/records/generate.py"


def by_name(case: dict[str, Any]) -> str:
    return str(case["name"])


def test_the_vector_file_is_reproduced_byte_for_byte(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("generate_records", VECTORS / "generate.py")
    assert spec is not None and spec.loader is not None
    records_generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(records_generate)
    records_generate.generate(tmp_path)
    assert (tmp_path / "records.json").read_bytes() == (VECTORS / "records.json").read_bytes(), (
        f"records.json changed; if on purpose: {REGENERATE}"
    )


def test_the_vectors_cover_both_kinds_of_record() -> None:
    assert {case["type"] for case in CASES} == {"review", "invalidation"}
    assert {case["tag"] for case in CASES} == {"handbook/v1/review", "handbook/v1/invalidation"}


@pytest.mark.parametrize("case", CASES, ids=by_name)
def test_signing_input_is_length_prefixed_tag_then_canonical_payload(case: dict[str, Any]) -> None:
    """Recomputed from the spec, not from `handbook.pedigree.records`: uint16be(len(tag)) || tag ||
    canonical(payload)."""
    tag = case["tag"].encode("ascii")
    expected = len(tag).to_bytes(2, "big") + tag + canonical.dumps(case["payload"])
    assert bytes.fromhex(case["signing_input"]) == expected


@pytest.mark.parametrize("case", CASES, ids=by_name)
def test_record_id_is_the_sha256_of_the_signing_input(case: dict[str, Any]) -> None:
    record = from_dict(json.loads(case["file"]))
    assert hashlib.sha256(bytes.fromhex(case["signing_input"])).hexdigest() == case["id"]
    assert record.id == record_id(record) == case["id"]


@pytest.mark.parametrize("case", CASES, ids=by_name)
def test_signature_is_the_seed_keys_deterministic_ed25519_signature(case: dict[str, Any]) -> None:
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(case["seed"]))
    public = PublicKey.from_raw(private.public_key().public_bytes_raw())
    signature = private.sign(bytes.fromhex(case["signing_input"]))
    assert (str(public), public.keyid) == (case["public_key"], case["keyid"])
    assert signature.hex() == case["signature"]


@pytest.mark.parametrize("case", CASES, ids=by_name)
def test_the_committed_record_file_reads_back_and_verifies(case: dict[str, Any]) -> None:
    """The file is canonical JSON and a newline, its signature the vector's in base64,
    and it verifies with the seed's public key as a declared reviewer."""
    data = json.loads(case["file"])
    record = from_dict(data)
    assert case["file"].encode("utf-8") == canonical.dumps(data) + b"\n"
    assert data["payload"] == case["payload"]
    assert base64.b64decode(data["signature"]).hex() == case["signature"]
    verify(record, {case["keyid"]: PublicKey.parse(case["public_key"])})
