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


def test_committed_chunk_file_is_the_layout_the_spec_gives() -> None:
    """chunks.bin, read as docs/spec/offsets.md writes it out, without the runtime."""
    import hashlib
    import struct

    data = (VECTORS / "chunks.bin").read_bytes()
    sample, size = generate.CHUNKED_SAMPLE, generate.CHUNK_SIZE
    assert data[:8] == b"HBCHUNKS" and struct.unpack_from("<2I", data, 8) == (1, 1)
    (length,) = struct.unpack_from("<I", data, 16)
    assert data[20 : 20 + length] == b"search.bin"
    total, whole, chunk = struct.unpack_from("<Q32sI", data, 20 + length)
    assert (total, whole, chunk) == (len(sample), hashlib.sha256(sample).digest(), size)
    digests = data[20 + length + 44 :]
    parts = [sample[at : at + size] for at in range(0, len(sample), size)]
    assert digests == b"".join(hashlib.sha256(p).digest() for p in parts)
    assert len(parts) == 3 and len(parts[-1]) == 2500 - 2048


def test_committed_ids_file_is_the_layout_the_spec_gives() -> None:
    """ids.bin, read as docs/spec/offsets.md writes it out, without the runtime."""
    import hashlib
    import struct

    data = (VECTORS / "ids.bin").read_bytes()
    assert data[:8] == b"HBDOCIDS" and struct.unpack_from("<2I", data, 8) == (1, 5)
    assert data[16:48] == hashlib.sha256(generate.IDS_CATALOG).digest()
    by_start, by_end = struct.unpack_from("<5I", data, 48), struct.unpack_from("<5I", data, 68)
    lines = [b"deviceacmeac200", b"deviceacmeac200", b"guide\xc3\xa9x", b"guide\xc3\xa9x", b"za"]
    assert data[88:] == b"\n" + b"".join(line + b"\n" for line in lines)
    assert by_start == (0, 1, 2, 3, 4)
    assert by_end == (
        0,
        1,
        4,
        2,
        3,
    )  # backwards: "002camecived" twice, "az", "x\xa9\xc3ediug" twice
