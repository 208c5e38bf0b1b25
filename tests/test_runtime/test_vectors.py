"""Golden vectors: the byte formats (canonical JSON, signing input, signatures, a signed
manifest) regenerated and compared byte for byte with the committed files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import ROOT

from handbook.bundle import canonical
from handbook.bundle.manifest import Manifest
from handbook.bundle.signing import PublicKey, verify

VECTORS = ROOT / "tests" / "vectors"
sys.path.insert(0, str(VECTORS))
import generate  # noqa: E402

REGENERATE = "python tests/vectors/generate.py"


@pytest.mark.parametrize(
    "name", sorted(p.name for p in VECTORS.iterdir() if p.suffix != ".py" and p.is_file())
)
def test_vector_files_are_reproduced_byte_for_byte(tmp_path: Path, name: str) -> None:
    generate.generate(tmp_path)
    assert (tmp_path / name).read_bytes() == (VECTORS / name).read_bytes(), (
        f"{name} changed; if on purpose: {REGENERATE}"
    )


def test_every_generated_file_is_committed(tmp_path: Path) -> None:
    generate.generate(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} <= {p.name for p in VECTORS.iterdir()}


def test_committed_manifest_verifies_with_the_committed_public_key() -> None:
    public_text, keyid = (VECTORS / "test-key.pub").read_text().split()
    key = PublicKey.parse(public_text)
    manifest = Manifest.from_bytes((VECTORS / "manifest.json").read_bytes())
    assert key.keyid == keyid
    assert verify(manifest.signatures, manifest.signed.to_dict(), [key]) == [keyid]
    assert bytes.fromhex((VECTORS / "signing-input.hex").read_text().strip()).startswith(
        b"\x00\x14handbook/v2/manifest{"
    )


def test_canonical_cases_read_back_strictly() -> None:
    import json

    for case in json.loads((VECTORS / "canonical.json").read_text(encoding="utf-8")):
        data = case["canonical"].encode("utf-8")
        assert canonical.dumps(canonical.loads(data, what=case["name"], max_bytes=1 << 16)) == data


def test_parsed_manifest_keeps_the_exact_signed_bytes() -> None:
    """The signature is checked over the signed part as read; it must be the canonical
    encoding of the parsed payload, byte for byte."""
    manifest = Manifest.from_bytes((VECTORS / "manifest.json").read_bytes())
    assert manifest.canonical_signed() == canonical.dumps(manifest.signed.to_dict())
