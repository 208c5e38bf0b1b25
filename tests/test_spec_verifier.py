"""An independent verifier of the `handbook/v2` bundle format, written from the format
description (DESIGN.md §5, docs/spec/bundle.md) alone.

If the runtime's verifier and the build agreed on a mistake, the runtime's own tests
would never notice. `verify_bundle` below shares no code with Handbook: it uses only
hashlib, json, base64 and cryptography (plus os and pathlib to read files), so a bundle
it accepts is one any other implementation of the spec can check too. The project is
used only to *build* bundles, through `handbook_build.pipeline.build` or the CLI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
EPOCH = "1700000000"

# -- the independent verifier (no Handbook imports below this line) -------------------------

TAG = b"handbook/v2/manifest"
SPEC = "handbook/v2"
ADDRESSED = ("content", "resources")
"""The folders of content-addressed files, which the manifest does not list: the catalog
names each file by its sha256 and gives its size."""
MANIFEST = "manifest.json"
CATALOG = "catalog.json"
OFFSETS = "catalog-offsets.bin"
CHUNKS = "chunks.bin"
IDS = "ids.bin"
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
SIGNED_KEYS = {"spec", "library", "version", "built_at", "files", "docs"}
_MARKUP = set("`*_[]<>\\&!")
"""A title holding any of these may differ from its heading's source text."""


class Refused(Exception):
    """The bundle does not meet the format description."""


def canonical(value: Any) -> bytes:
    """Canonical JSON for payloads whose keys are all ASCII (the signed profile): sorted
    keys, no whitespace, strings escaped as RFC 8785 prescribes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def _strict_json(data: bytes, what: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise Refused(f"{what}: duplicate key {key!r}")
            out[key] = value
        return out

    def no_number(text: str) -> Any:
        raise Refused(f"{what}: {text} is not allowed (integers only, no floats)")

    try:
        return json.loads(
            data.decode("utf-8"),
            object_pairs_hook=pairs,
            parse_float=no_number,
            parse_constant=no_number,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(f"{what}: not strict UTF-8 JSON ({exc})") from None


def _check_ascii_keys(value: Any) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            if not key.isascii():
                raise Refused(f"{MANIFEST}: key {key!r} is not ASCII")
            _check_ascii_keys(child)
    elif isinstance(value, list):
        for child in value:
            _check_ascii_keys(child)


def _b64_strict(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise Refused(f"{what} is not a string")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise Refused(f"{what} is not standard padded base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise Refused(f"{what} is not the canonical base64 of its bytes")
    return raw


def _safe_parts(name: str) -> list[str]:
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts):
        raise Refused(f"{name!r}: not a safe relative bundle path")
    return parts


def _read_regular(root: Path, name: str) -> bytes:
    """A listed file's bytes; no component of its path may be a symlink."""
    current = root
    for part in _safe_parts(name):
        current = current / part
        if current.is_symlink():
            raise Refused(f"{name}: a symlink inside the bundle")
    if not current.is_file():
        raise Refused(f"{name}: listed but missing (or not a regular file)")
    return current.read_bytes()


def verify_bundle(path: Path, public_key: bytes) -> dict[str, Any]:
    """Check the bundle at `path` (a symlink to a version folder) against the Ed25519
    key `public_key` (raw 32 bytes); return the signed payload or raise `Refused`."""
    root = Path(os.path.realpath(path))
    if not root.is_dir():
        raise Refused(f"{path}: not a directory")

    # 1. The manifest: strict, canonical JSON with ASCII keys.
    manifest_bytes = _read_regular(root, MANIFEST)
    if len(manifest_bytes) > MAX_MANIFEST_BYTES:
        raise Refused(f"{MANIFEST}: over 16 MiB")
    manifest = _strict_json(manifest_bytes, MANIFEST)
    if not isinstance(manifest, dict) or set(manifest) != {"signed", "signatures"}:
        raise Refused(f"{MANIFEST}: must be {{signed, signatures}}")
    _check_ascii_keys(manifest)
    if canonical(manifest) != manifest_bytes:
        raise Refused(f"{MANIFEST}: not canonical JSON")
    signed = manifest["signed"]
    if not isinstance(signed, dict) or not SIGNED_KEYS <= set(signed) <= SIGNED_KEYS | {"expires"}:
        raise Refused(
            f"{MANIFEST}: signed payload must have exactly the keys {sorted(SIGNED_KEYS)} (+ expires)"
        )
    if not isinstance(signed["docs"], int) or isinstance(signed["docs"], bool):
        raise Refused(f"{MANIFEST}: signed.docs must be an integer")
    if signed["spec"] != SPEC:
        raise Refused(f"{MANIFEST}: spec {signed['spec']!r} is not {SPEC!r}")

    # 2. The signature: uint16be(len(tag)) || tag || canonical(signed), Ed25519.
    message = len(TAG).to_bytes(2, "big") + TAG + canonical(signed)
    keyid = hashlib.sha256(public_key).hexdigest()
    verifier = Ed25519PublicKey.from_public_bytes(public_key)
    signatures = manifest["signatures"]
    if not isinstance(signatures, list):
        raise Refused(f"{MANIFEST}: signatures must be a list")
    for entry in signatures:
        if not isinstance(entry, dict) or entry.get("keyid") != keyid:
            continue
        sig = _b64_strict(entry.get("sig"), "signature")
        if len(sig) != 64:
            continue
        try:
            verifier.verify(sig, message)
        except InvalidSignature:
            continue
        break
    else:
        raise Refused(f"{MANIFEST}: no valid signature by key id {keyid[:16]}")

    # 3. Every listed file: present, regular, right size and sha256; none content-addressed.
    files = signed["files"]
    if not isinstance(files, dict) or MANIFEST in files:
        raise Refused(f"{MANIFEST}: files must be an object that does not list the manifest")
    for name in files:
        if name.split("/")[0].casefold() in ADDRESSED:
            raise Refused(f"{MANIFEST}: lists {name}, in a folder the catalog vouches for")
    contents: dict[str, bytes] = {}
    for name, entry in sorted(files.items()):
        if (
            not isinstance(entry, dict)
            or set(entry) != {"sha256", "bytes"}
            or not isinstance(entry["bytes"], int)
        ):
            raise Refused(f"{MANIFEST}: files[{name!r}] must be {{sha256, bytes}}")
        data = _read_regular(root, name)
        if len(data) != entry["bytes"]:
            raise Refused(f"{name}: {len(data)} bytes, listed as {entry['bytes']}")
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise Refused(f"{name}: sha256 differs from the manifest")
        contents[name] = data

    # 4. Nothing else: no unlisted file, folder or link (the content folders: step 5).
    listed = {MANIFEST, *files}
    folders = {"/".join(n.split("/")[:i]) for n in listed for i in range(1, n.count("/") + 1)}
    addressed: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        inside = prefix.split("/")[0] in ADDRESSED
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)) or inside:
                raise Refused(f"{prefix}{name}/: a folder or link the manifest does not list")
            if prefix + name not in folders and not (not prefix and name in ADDRESSED):
                raise Refused(f"{prefix}{name}/: a folder or link the manifest does not list")
        for name in filenames:
            if inside:
                addressed.add(prefix + name)
            elif prefix + name not in listed:
                raise Refused(f"{prefix}{name}: present but not listed in the manifest")

    # 5. The catalog agrees with the manifest; each content and attached file it names is
    #    there, named by the sha256 of its bytes, of the size the catalog gives; no other.
    if CATALOG not in contents:
        raise Refused(f"{CATALOG}: not listed")
    catalog = _strict_json(contents[CATALOG], CATALOG)  # JSON without floats
    library = catalog["library"]
    if (library["name"], library["version"]) != (signed["library"], signed["version"]):
        raise Refused(f"{CATALOG}: names another library or version than the manifest")
    if len(catalog["docs"]) != signed["docs"]:
        raise Refused(f"{CATALOG}: {len(catalog['docs'])} docs, the manifest says {signed['docs']}")
    ids = [doc["id"] for doc in catalog["docs"]]
    if ids != sorted(set(ids)):
        raise Refused(f"{CATALOG}: doc ids are not unique and sorted")
    referenced: set[str] = set()
    for doc in catalog["docs"]:
        referenced |= _check_doc(root, doc)
    orphans = addressed - referenced
    if orphans:
        raise Refused(f"{sorted(orphans)[0]}: a content file no doc refers to")

    # 6. catalog-offsets.bin, written for this catalog.json, frames each doc's entry.
    if OFFSETS in contents:
        _check_offsets(contents[OFFSETS], contents[CATALOG], files[CATALOG]["sha256"], catalog)

    # 7. chunks.bin: each chunk hash it gives for the listed version of a file matches.
    if CHUNKS in contents:
        _check_chunks(contents[CHUNKS], files, contents)

    # 8. ids.bin, written for this catalog.json: the ids squeezed, a line each, and the
    #    line numbers ordered by squeezed id and by squeezed id read backwards.
    if IDS in contents:
        _check_ids(contents[IDS], files[CATALOG]["sha256"], ids)
    return signed


def _squeeze(doc_id: str) -> bytes:
    """An id squeezed as docs/spec/offsets.md says: UTF-8, ASCII letters lowercased, every
    other ASCII byte but the digits dropped."""
    out = bytearray()
    for byte in doc_id.encode("utf-8"):
        if byte >= 128 or chr(byte) in "0123456789abcdefghijklmnopqrstuvwxyz":
            out.append(byte)
        elif "A" <= chr(byte) <= "Z":
            out.append(byte + 32)
    return bytes(out)


def _check_ids(data: bytes, catalog_sha: str, ids: list[str]) -> None:
    if data[:8] != b"HBDOCIDS" or len(data) < 48:
        raise Refused(f"{IDS}: no HBDOCIDS header")
    version, docs = struct.unpack_from("<2I", data, 8)
    if version != 1:
        raise Refused(f"{IDS}: version {version}")
    if data[16:48].hex() != catalog_sha:
        return  # written for another catalog.json: readers suggest from the catalog's ids
    if docs != len(ids) or len(data) < 48 + 8 * docs:
        raise Refused(f"{IDS}: {docs} docs, the catalog has {len(ids)}")
    by_start = list(struct.unpack_from(f"<{docs}I", data, 48))
    by_end = list(struct.unpack_from(f"<{docs}I", data, 48 + 4 * docs))
    lines = [_squeeze(i) for i in ids]
    if data[48 + 8 * docs :] != b"\n" + b"".join(line + b"\n" for line in lines):
        raise Refused(f"{IDS}: the squeezed ids are not the catalog's")
    if by_start != sorted(range(docs), key=lambda n: (lines[n], n)):
        raise Refused(f"{IDS}: the order by start is not the squeezed ids'")
    if by_end != sorted(range(docs), key=lambda n: (lines[n][::-1], n)):
        raise Refused(f"{IDS}: the order by end is not the squeezed ids'")


def _check_chunks(data: bytes, files: dict[str, Any], contents: dict[str, bytes]) -> None:
    if data[:8] != b"HBCHUNKS" or len(data) < 16:
        raise Refused(f"{CHUNKS}: no HBCHUNKS header")
    version, count = struct.unpack_from("<2I", data, 8)
    if version != 1:
        raise Refused(f"{CHUNKS}: version {version}")
    at, previous = 16, b""
    entries: list[tuple[str, int, int, bytes]] = []
    for _ in range(count):
        if at + 4 > len(data):
            raise Refused(f"{CHUNKS}: ends inside an entry")
        (length,) = struct.unpack_from("<I", data, at)
        path = data[at + 4 : at + 4 + length]
        if path <= previous:
            raise Refused(f"{CHUNKS}: paths not sorted and unique")
        try:
            name = path.decode("utf-8")
            size, sha, chunk = struct.unpack_from("<Q32sI", data, at + 4 + length)
        except (UnicodeDecodeError, struct.error):
            raise Refused(f"{CHUNKS}: ends inside an entry, or a path is not UTF-8") from None
        previous = path
        at += 4 + length + 44
        if name not in files:
            raise Refused(f"{CHUNKS}: {name} is not listed")
        if chunk < 1024 or chunk > 1 << 30 or chunk & (chunk - 1):
            raise Refused(f"{CHUNKS}: {name}'s chunk size {chunk} is not a power of two")
        chunks = -(-size // chunk)
        digests, at = data[at : at + 32 * chunks], at + 32 * chunks
        if len(digests) != 32 * chunks:
            raise Refused(f"{CHUNKS}: ends inside {name}'s chunk hashes")
        if sha.hex() == files[name]["sha256"]:  # else written for another version of
            entries.append((name, size, chunk, digests))  # the file: readers hash it whole
    if at != len(data):
        raise Refused(f"{CHUNKS}: bytes after the last entry")
    for name, size, chunk, digests in entries:
        whole = contents[name]
        if size != len(whole):
            raise Refused(f"{CHUNKS}: {name} has {size} bytes, not {len(whole)}")
        for n in range(len(digests) // 32):
            part = whole[n * chunk : (n + 1) * chunk]
            if hashlib.sha256(part).digest() != digests[32 * n : 32 * n + 32]:
                raise Refused(f"{name}: chunk {n} does not match its sha256 in {CHUNKS}")


def _check_offsets(data: bytes, raw: bytes, catalog_sha: str, catalog: dict[str, Any]) -> None:
    if data[:8] != b"HBCATOFF":
        raise Refused(f"{OFFSETS}: no HBCATOFF header")
    version, docs, lib_start, lib_end = struct.unpack_from("<4I", data, 8)
    if version != 1:
        raise Refused(f"{OFFSETS}: version {version}")
    if data[24:56].hex() != catalog_sha:
        return  # written for another catalog.json: readers parse the whole catalog
    if docs != len(catalog["docs"]):
        raise Refused(f"{OFFSETS}: {docs} docs, the catalog has {len(catalog['docs'])}")
    starts = struct.unpack_from(f"<{docs}I", data, 56)
    ends = struct.unpack_from(f"<{docs}I", data, 56 + 4 * docs)
    id_offsets = struct.unpack_from(f"<{docs + 1}I", data, 56 + 8 * docs)
    ids_at = 56 + 12 * docs + 4
    if ids_at + id_offsets[-1] != len(data):
        raise Refused(f"{OFFSETS}: the ids do not end the file")
    if json.loads(raw[lib_start:lib_end]) != catalog["library"]:
        raise Refused(f"{OFFSETS}: the library range is not the catalog's library")
    for n, doc in enumerate(catalog["docs"]):
        name = data[ids_at + id_offsets[n] : ids_at + id_offsets[n + 1]].decode("utf-8")
        if name != doc["id"] or json.loads(raw[starts[n] : ends[n]]) != doc:
            raise Refused(f"{OFFSETS}: entry {n} does not frame doc {doc['id']!r}")


def _addressed_file(root: Path, what: str, name: str, folder: str, suffix: str) -> bytes:
    """The bytes of content-addressed file `name`, which must be `folder/<sha256><suffix>`
    with the sha256 of those very bytes."""
    sha = name.removeprefix(folder + "/").removesuffix(suffix)
    if name != f"{folder}/{sha}{suffix}" or len(sha) != 64 or set(sha) - set("0123456789abcdef"):
        raise Refused(f"{what}: {name!r} is not named {folder}/<sha256>{suffix}")
    path = root / folder / f"{sha}{suffix}"
    if path.is_symlink() or not path.is_file():
        raise Refused(f"{what}: {name} is missing (or not a regular file)")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        raise Refused(f"{name}: sha256 differs from its name")
    return data


def _check_doc(root: Path, doc: dict[str, Any]) -> set[str]:
    """Check one doc entry against its content and attached files; the files it names."""
    what = f"doc {doc['id']!r}"
    data = _addressed_file(root, what, doc["content"], "content", ".md")
    if doc["bytes"] != len(data):
        raise Refused(f"{what}: bytes {doc['bytes']} but the content has {len(data)}")
    try:
        chars = len(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused(f"{what}: content is not UTF-8") from None
    if doc["chars"] != chars:
        raise Refused(f"{what}: chars {doc['chars']} is not the content's length in characters")
    _check_sections(what, doc["sections"], data)
    _check_sections(what, doc.get("subsections", []), data, levels=range(3, 7))
    named = {doc["content"]}
    for attached in doc.get("resources", []):
        where = f"{what} file {attached['path']!r}"
        name = f"resources/{attached['sha256']}"
        data = _addressed_file(root, where, name, "resources", "")
        if attached["bytes"] != len(data):
            raise Refused(f"{where}: bytes {attached['bytes']} but the file has {len(data)}")
        _check_sections(where, attached.get("sections", []), data)
        _check_sections(where, attached.get("subsections", []), data, levels=range(3, 7))
        named.add(name)
    return named


def _check_sections(
    what: str, sections: list[dict[str, Any]], data: bytes, levels: range = range(2, 3)
) -> None:
    """`##` sections (of a doc's content, or of a markdown file attached to it), or a doc's
    `###` to `######` subsections (`levels`): each a UTF-8 byte range of `data` that
    starts at its heading. A reader written before subsections never looks at them."""
    for section in sections:
        start, end, title = section["start"], section["end"], section["title"]
        if not 0 <= start <= end <= len(data):
            raise Refused(f"{what}: section {title!r} lies outside the content")
        try:
            text = data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(
                f"{what}: section {title!r} offsets are not UTF-8 character boundaries"
            ) from None
        if section["level"] not in levels:
            wanted = "a ## heading" if levels == range(2, 3) else "a ### to ###### heading"
            raise Refused(f"{what}: section {title!r} is not {wanted}")
        line = text.split("\n", 1)[0]
        hashes = len(line) - len(line.lstrip("#"))
        rest = line[hashes:]
        if not 1 <= hashes <= 6 or (rest and rest[0] not in " \t"):
            raise Refused(f"{what}: section {title!r} does not start at a heading: {line[:40]!r}")
        if hashes != section["level"]:
            raise Refused(
                f"{what}: section {title!r} is level {section['level']}, its heading has {hashes} '#'"
            )
        if not _MARKUP & set(title) and title not in rest:
            raise Refused(f"{what}: section {title!r} starts at heading {line[:60]!r}")
        if section["chars"] != len(text):
            raise Refused(f"{what}: section {title!r} chars {section['chars']} != {len(text)}")


# -- building bundles with the project -------------------------------------------------------


@dataclass(frozen=True)
class Built:
    out: Path
    """The published path (a symlink to the version folder)."""
    key: Ed25519PrivateKey

    @property
    def public(self) -> bytes:
        return self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )


def build(
    config_path: Path, out: Path, key: Ed25519PrivateKey | None = None, chunks: int = 0
) -> Built:
    """Build with `handbook_build.pipeline.build` and a fresh key (the only project use);
    with `chunks`, every file above that size gets chunk hashes of that size."""
    from handbook_build.config.settings import load_config
    from handbook_build.pipeline import build as pipeline_build
    from handbook_build.write import seal

    key = key or Ed25519PrivateKey.generate()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        if chunks:
            mp.setattr(seal, "CHUNK_BYTES", chunks)
            mp.setattr(seal, "CHUNKED_ABOVE", chunks)
        pipeline_build(load_config(config_path), out, key)
    return Built(out, key)


def write_library(root: Path, docs: dict[str, str], library: str = "spec-test") -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in docs.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text, encoding="utf-8", newline="")
    (root / "mkdocs.yml").write_text(
        f"site_name: t\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: {library}\n      version: 1.0.0\n",
        encoding="utf-8",
    )
    return root / "mkdocs.yml"


def doc(id_: str, title: str, body: str, keywords: str = "[]") -> str:
    head = f"---\nid: {id_}\ntitle: {title}\nkind: guide\nsummary: A doc about {title}.\nkeywords: {keywords}\n---\n"
    return head + textwrap.dedent(body)


MULTIBYTE_DOCS = {
    "rocket.md": doc(
        "launch.rocket",
        "Rocket launch 🚀",
        """\
        # Rocket launch 🚀

        Before any section: 🚀 café naïve 東京の工場 𠮷野家 ￦ ﬁeld.

        ## Countdown 🚀

        Ten, nine… 🚀

        ### Über-check

        Überdruck prüfen.

        ## 東京の工場

        日本語のテキスト。
        """,
    ),
    "plain.md": doc(
        "plain.ascii",
        "Plain",
        """\
        # Plain

        ## Only ASCII

        Text.
        """,
    ),
}


ATTACHED_DOCS = {
    "kit/SKILL.md": doc("skill.kit", "Kit", "# Kit\n\n## Use\n\nText.\n"),
    "kit/references/guide.md": "---\nname: guide\n---\n# Guide 🚀\n\n"
    "Before: 東京.\n\n## Über 🚀\n\nText.\n\n### Deeper\n\nMore.\n\n## 東京の工場\n\n日本語。\n",
}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(EXAMPLE, tmp_path_factory.mktemp("example") / "bundle")


@pytest.fixture(scope="module")
def multibyte(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("multibyte")
    return build(write_library(root / "lib", MULTIBYTE_DOCS), root / "bundle")


# -- acceptance ---------------------------------------------------------------------------------


def test_example_library_is_accepted(example: Built) -> None:
    """The reference library, built with a fresh key, meets the spec as written."""
    assert example.out.is_symlink()
    signed = verify_bundle(example.out, example.public)
    assert signed["library"] == "plant-floor"
    assert signed["built_at"] == "2023-11-14T22:13:20Z"
    assert {
        "catalog.json",
        "catalog-offsets.bin",
        IDS,
        "index.json.gz",
        "tools.json",
        "llms.txt",
    } <= set(signed["files"])
    catalog = json.loads((example.out / CATALOG).read_bytes())
    assert sum(len(d["sections"]) for d in catalog["docs"]) > 10  # the section checks did run


def test_multibyte_offsets_are_utf8_byte_offsets(multibyte: Built) -> None:
    """Emoji, CJK and accents before and inside sections: offsets must count UTF-8 bytes,
    not characters, or every slice after the first non-ASCII character drifts."""
    verify_bundle(multibyte.out, multibyte.public)
    catalog = json.loads((multibyte.out / CATALOG).read_bytes())
    rocket = next(d for d in catalog["docs"] if d["id"] == "launch.rocket")
    assert [s["title"] for s in rocket["sections"]] == [
        "Countdown 🚀",
        "東京の工場",
    ]  # "### Über-check" is inside the first, and a subsection of its own
    assert [(s["title"], s["level"]) for s in rocket["subsections"]] == [("Über-check", 3)]
    assert rocket["bytes"] > rocket["chars"]


def test_same_sources_key_and_epoch_give_identical_bundles(example: Built, tmp_path: Path) -> None:
    """Ed25519 is deterministic, so a rebuild is byte-identical down to the manifest,
    and lands in the same version folder name."""
    again = build(EXAMPLE, tmp_path / "bundle", example.key)
    assert (again.out / MANIFEST).read_bytes() == (example.out / MANIFEST).read_bytes()
    assert Path(os.path.realpath(again.out)).name == Path(os.path.realpath(example.out)).name


def test_cli_keygen_and_build_are_accepted(tmp_path: Path, example: Built) -> None:
    """The CLI path (keygen prints the public key, build signs under $CI) gives a bundle
    the spec verifier accepts, with the same files as the in-process build."""
    cli = [sys.executable, "-c", "from handbook.cli import main; main()"]
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "CI": "1"}
    env.pop("HANDBOOK_SIGNING_KEY", None)
    keygen = subprocess.run(
        [*cli, "keygen", "--out", str(tmp_path / "key.pem")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    printed = [line for line in keygen.stdout.splitlines() if line.startswith("ed25519:")]
    assert len(printed) == 1, keygen.stdout
    public = base64.b64decode(printed[0].removeprefix("ed25519:"), validate=True)
    assert len(public) == 32
    subprocess.run(
        [
            *cli,
            "build",
            "--config",
            str(EXAMPLE),
            "--out",
            str(tmp_path / "bundle"),
            "--key",
            str(tmp_path / "key.pem"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    signed = verify_bundle(tmp_path / "bundle", public)
    # Same inputs and SOURCE_DATE_EPOCH give the same files, whoever builds them.
    assert signed["files"] == verify_bundle(example.out, example.public)["files"]


# -- refusal ------------------------------------------------------------------------------------


def _copy(built: Built, dest: Path) -> Path:
    shutil.copytree(os.path.realpath(built.out), dest, symlinks=True)
    return dest


def _a_content_file(root: Path) -> Path:
    return sorted((root / "content").iterdir())[0]


def _flip_content_byte(root: Path) -> None:
    path = _a_content_file(root)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate_index(root: Path) -> None:
    path = root / "index.json.gz"
    path.write_bytes(path.read_bytes()[:-1])


def _add_unlisted_file(root: Path) -> None:
    (root / "content" / "extra.md").write_text("# not listed\n", encoding="utf-8")


def _add_unlisted_root_file(root: Path) -> None:
    (root / "extra.txt").write_text("not listed\n", encoding="utf-8")


def _add_unreferenced_content(root: Path) -> None:
    """A well-named content file (its name is its bytes' sha256) that no doc refers to."""
    data = b"# stray\n"
    (root / "content" / f"{hashlib.sha256(data).hexdigest()}.md").write_bytes(data)


def _add_folder_in_content(root: Path) -> None:
    (root / "content" / "nested").mkdir()


def _add_unlisted_folder(root: Path) -> None:
    (root / "assets").mkdir()


def _symlink_listed_file(root: Path) -> None:
    target = root.parent / "outside-llms.txt"
    shutil.copyfile(root / "llms.txt", target)
    (root / "llms.txt").unlink()
    (root / "llms.txt").symlink_to(target)


def _pretty_print_manifest(root: Path) -> None:
    path = root / MANIFEST
    path.write_text(
        json.dumps(json.loads(path.read_bytes()), indent=1, sort_keys=True), encoding="utf-8"
    )


def _alter_signed_payload(root: Path) -> None:
    path = root / MANIFEST
    manifest = json.loads(path.read_bytes())
    manifest["signed"]["built_at"] = "2099-01-01T00:00:00Z"
    path.write_bytes(canonical(manifest))


def _reencode_signature(root: Path) -> None:
    """The same signature bytes, base64 without padding: one encoding only is accepted."""
    path = root / MANIFEST
    manifest = json.loads(path.read_bytes())
    manifest["signatures"][0]["sig"] = manifest["signatures"][0]["sig"].rstrip("=")
    path.write_bytes(canonical(manifest))


TAMPERING: dict[str, tuple[Callable[[Path], None], str]] = {
    "flipped content byte": (_flip_content_byte, "sha256 differs"),
    "unreferenced content file": (_add_unreferenced_content, "no doc refers to"),
    "misnamed content file": (_add_unlisted_file, "no doc refers to"),
    "folder in content": (_add_folder_in_content, "does not list"),
    "truncated index": (_truncate_index, "bytes, listed as"),
    "unlisted file": (_add_unlisted_root_file, "not listed"),
    "unlisted folder": (_add_unlisted_folder, "does not list"),
    "symlinked file": (_symlink_listed_file, "symlink"),
    "pretty-printed manifest": (_pretty_print_manifest, "not canonical"),
    "altered signed payload": (_alter_signed_payload, "no valid signature"),
    "unpadded signature": (_reencode_signature, "base64"),
}


def test_one_flipped_content_byte_is_refused(example: Built, tmp_path: Path) -> None:
    """The acceptance test's counterpart: a bundle that differs by one bit is refused."""
    root = _copy(example, tmp_path / "copy")
    verify_bundle(root, example.public)  # the untouched copy is fine
    _flip_content_byte(root)
    with pytest.raises(Refused, match=r"content/[0-9a-f]{64}\.md: sha256 differs from its name"):
        verify_bundle(root, example.public)


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_tampered_bundles_are_refused(example: Built, tmp_path: Path, case: str) -> None:
    """Each rule of the format refuses its own kind of damage (so acceptance means something)."""
    tamper, message = TAMPERING[case]
    root = _copy(example, tmp_path / "copy")
    tamper(root)
    with pytest.raises(Refused, match=message):
        verify_bundle(root, example.public)


def test_another_key_is_refused(example: Built) -> None:
    other = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    with pytest.raises(Refused, match="no valid signature"):
        verify_bundle(example.out, other)


# -- the catalog checks, on bundles re-signed after an edit ----------------------------------


def _resign(root: Path, key: Ed25519PrivateKey, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the catalog, then list and sign it again, as a dishonest builder would."""
    catalog = json.loads((root / CATALOG).read_bytes())
    edit(catalog)
    data = json.dumps(catalog, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )
    _resign_file(root, key, CATALOG, data)


def _resign_file(root: Path, key: Ed25519PrivateKey, name: str, data: bytes) -> None:
    """Write `data` as `name`, then list and sign it again."""
    (root / name).write_bytes(data)
    manifest = json.loads((root / MANIFEST).read_bytes())
    signed = manifest["signed"]
    signed["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    sig = key.sign(len(TAG).to_bytes(2, "big") + TAG + canonical(signed))
    manifest["signatures"] = [
        {"keyid": hashlib.sha256(public).hexdigest(), "sig": base64.b64encode(sig).decode()}
    ]
    (root / MANIFEST).write_bytes(canonical(manifest))


def _first_section(catalog: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = next(d for d in catalog["docs"] if d["sections"])["sections"][0]
    return section


def _shift_section(catalog: dict[str, Any]) -> None:
    _first_section(catalog)["start"] += len(b"## ")  # past the '#'s, onto the title


def _section_past_end(catalog: dict[str, Any]) -> None:
    doc = next(d for d in catalog["docs"] if d["sections"])
    doc["sections"][-1]["end"] = doc["bytes"] + 1


def _retitle_section(catalog: dict[str, Any]) -> None:
    _first_section(catalog)["title"] = "Something else"


def _wrong_level(catalog: dict[str, Any]) -> None:
    _first_section(catalog)["level"] = 3


def _subsection_as_section(catalog: dict[str, Any]) -> None:
    """A `##` level claimed for a subsection: the level list and the heading disagree."""
    doc = next(d for d in catalog["docs"] if d.get("subsections"))
    doc["subsections"][0]["level"] = 2


def _subsection_past_end(catalog: dict[str, Any]) -> None:
    doc = next(d for d in catalog["docs"] if d.get("subsections"))
    doc["subsections"][-1]["end"] = doc["bytes"] + 1


def _wrong_size(catalog: dict[str, Any]) -> None:
    catalog["docs"][0]["bytes"] += 1


def _drop_doc(catalog: dict[str, Any]) -> None:
    del catalog["docs"][0]


def _mid_character(catalog: dict[str, Any]) -> None:
    """Start a section one byte into a multi-byte character: character offsets used as
    byte offsets end up exactly like this."""
    rocket = next(d for d in catalog["docs"] if d["id"] == "launch.rocket")
    cjk = next(s for s in rocket["sections"] if s["title"] == "東京の工場")
    cjk["end"] = cjk["start"] + len(b"## ") + 1  # one byte into 東


CATALOG_EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "shifted section": (_shift_section, "does not start at a heading"),
    "section past the end": (_section_past_end, "outside the content"),
    "retitled section": (_retitle_section, "starts at heading"),
    "wrong level": (_wrong_level, "is not a ## heading"),
    "subsection as section": (_subsection_as_section, "is not a ### to ###### heading"),
    "subsection past the end": (_subsection_past_end, "outside the content"),
    "wrong size": (_wrong_size, "bytes"),
    "dropped doc": (_drop_doc, "docs, the manifest says"),
    "offset mid-character": (_mid_character, "not UTF-8 character boundaries"),
}


def test_attached_markdown_sections_slice_the_file(tmp_path: Path) -> None:
    """An attached markdown file's sections are byte ranges of its own bytes, held to the
    same rules as a doc's; one moved off its heading is refused."""
    built = build(write_library(tmp_path / "lib", ATTACHED_DOCS), tmp_path / "bundle")
    verify_bundle(built.out, built.public)
    catalog = json.loads((built.out / CATALOG).read_bytes())
    guide = catalog["docs"][0]["resources"][0]
    assert [s["title"] for s in guide["sections"]] == ["Über 🚀", "東京の工場"]

    def shift(catalog: dict[str, Any]) -> None:
        catalog["docs"][0]["resources"][0]["sections"][1]["start"] += len(b"## ")

    root = _copy(built, tmp_path / "copy")
    _resign(root, built.key, shift)
    with pytest.raises(Refused, match=r"file .references/guide\.md.: section .* does not start"):
        verify_bundle(root, built.public)


def test_offsets_that_frame_another_doc_are_refused(multibyte: Built, tmp_path: Path) -> None:
    """catalog-offsets.bin, re-signed with the first id's range moved onto the second doc."""
    root = _copy(multibyte, tmp_path / "copy")
    data = bytearray((root / OFFSETS).read_bytes())
    docs = struct.unpack_from("<I", data, 12)[0]
    assert docs >= 2
    starts = struct.unpack_from(f"<{docs}I", data, 56)
    ends = struct.unpack_from(f"<{docs}I", data, 56 + 4 * docs)
    struct.pack_into("<I", data, 56, starts[1])
    struct.pack_into("<I", data, 56 + 4 * docs, ends[1])
    _resign_file(root, multibyte.key, OFFSETS, bytes(data))
    with pytest.raises(Refused, match=r"catalog-offsets\.bin: entry 0 does not frame"):
        verify_bundle(root, multibyte.public)


def test_ids_that_are_not_the_catalogs_are_refused(multibyte: Built, tmp_path: Path) -> None:
    """ids.bin, re-signed with a line changed or an order's first two lines swapped."""
    data = (multibyte.out / IDS).read_bytes()
    docs = struct.unpack_from("<I", data, 12)[0]
    first = struct.unpack_from("<2I", data, 48)
    swapped = data[:48] + struct.pack("<2I", *first[::-1]) + data[56:]
    last = data.rindex(b"\n", 0, len(data) - 1) + 1
    cases = {
        "order by start": swapped,
        "squeezed ids are not": data[:last] + b"z" + data[last + 1 :],
        "0 docs": data[:12] + struct.pack("<I", 0) + data[16:48] + b"\n\n",
    }
    assert docs >= 2 and data[last:-1]
    for n, (message, changed) in enumerate(cases.items()):
        root = _copy(multibyte, tmp_path / str(n))
        _resign_file(root, multibyte.key, IDS, changed)
        with pytest.raises(Refused, match=message):
            verify_bundle(root, multibyte.public)


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The example with 1 KiB chunk hashes of every file above 1 KiB."""
    return build(EXAMPLE, tmp_path_factory.mktemp("chunked") / "bundle", chunks=1024)


def test_chunk_hashes_are_accepted_and_checked(chunked: Built, tmp_path: Path) -> None:
    """chunks.bin as the spec describes it: every chunk hash matches; one signed wrong,
    one chunk short, or a chunk size that is not a power of two, and it is refused."""
    assert {CHUNKS, CATALOG, "search.bin"} <= set(
        verify_bundle(chunked.out, chunked.public)["files"]
    )
    data = (chunked.out / CHUNKS).read_bytes()
    at = data.index(b"search.bin") + len(b"search.bin") + 8 + 32
    cases = {
        "does not match its sha256": data[: at + 4 + 64] + bytes(32) + data[at + 4 + 96 :],
        "ends inside|bytes after": data[: at + 4] + data[at + 36 :],
        "not a power of two": data[:at] + struct.pack("<I", 3000) + data[at + 4 :],
    }
    for n, (message, changed) in enumerate(cases.items()):
        root = _copy(chunked, tmp_path / str(n))
        _resign_file(root, chunked.key, CHUNKS, changed)
        with pytest.raises(Refused, match=message):
            verify_bundle(root, chunked.public)


def test_a_signed_listing_of_a_content_file_is_refused(multibyte: Built, tmp_path: Path) -> None:
    """A manifest that lists a content file, as handbook/v1 did, signed by the right key:
    the content folders are the catalog's, so such a listing is not a v2 manifest."""
    root = _copy(multibyte, tmp_path / "copy")
    content = _a_content_file(root)
    _resign_file(root, multibyte.key, f"content/{content.name}", content.read_bytes())
    with pytest.raises(Refused, match="in a folder the catalog vouches for"):
        verify_bundle(root, multibyte.public)


def test_resigned_unchanged_bundle_is_accepted(multibyte: Built, tmp_path: Path) -> None:
    """The re-signing helper itself is honest: with no edit the bundle still verifies."""
    root = _copy(multibyte, tmp_path / "copy")
    _resign(root, multibyte.key, lambda catalog: None)
    verify_bundle(root, multibyte.public)


@pytest.mark.parametrize("case", sorted(CATALOG_EDITS))
def test_validly_signed_but_wrong_catalogs_are_refused(
    multibyte: Built, tmp_path: Path, case: str
) -> None:
    """A signature proves who built the bundle, not that its catalog is right."""
    edit, message = CATALOG_EDITS[case]
    root = _copy(multibyte, tmp_path / "copy")
    _resign(root, multibyte.key, edit)
    with pytest.raises(Refused, match=message):
        verify_bundle(root, multibyte.public)


# -- regressions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "separator",
    ["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c"],
    ids=["U+2028", "U+2029", "U+0085", "form-feed", "vertical-tab", "U+001C"],
)
def test_sections_after_unicode_line_separators(tmp_path: Path, separator: str) -> None:
    """Text pasted from word processors or JavaScript strings carries U+2028 and friends:
    ordinary characters inside a markdown paragraph (markdown-it breaks lines at \\n only),
    so they must not move any section. Offsets were once computed with str.splitlines(),
    which breaks at all of these, and every later section started on the wrong line."""
    config = write_library(
        tmp_path / "lib",
        {
            "pasted.md": doc(
                "pasted.text",
                "Pasted",
                f"# Pasted\n\nA line{separator}pasted from elsewhere.\n\n## After it\n\nText.\n",
            ),
        },
    )
    built = build(config, tmp_path / "bundle")
    verify_bundle(built.out, built.public)


def _iter_sections(built: Built) -> Iterator[tuple[str, bytes]]:
    catalog = json.loads((built.out / CATALOG).read_bytes())
    for entry in catalog["docs"]:
        data = (built.out / entry["content"]).read_bytes()
        for section in entry["sections"]:
            yield section["title"], data[section["start"] : section["end"]]


def test_example_sections_slice_to_their_own_text(example: Built) -> None:
    """Each section's bytes hold its heading and no later heading of the same level."""
    for title, data in _iter_sections(example):
        text = data.decode("utf-8")
        level = len(text) - len(text.lstrip("#"))
        assert f"\n{'#' * level} " not in text, title
