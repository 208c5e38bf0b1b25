"""Manifests that are not canonical are refused, even when validly signed.

Each variant takes the good manifest of a built bundle and changes its bytes: duplicate
keys, whitespace, key order, a BOM, NaN, floats, integers out of [0, 2^53-1], lone
surrogates, non-NFC text, escapes the canonical form does not use, nesting beyond the
depth limit, a manifest over the size limit. Where the change touches the signed
payload, the payload is signed again with the test key, so the signature itself is
valid over what the variant claims:

- ``raw``: over the signed payload's bytes exactly as they stand in the variant (what a
  reader that took the bytes as given would verify);
- ``canonical``: with `handbook.bundle.signing.sign`, over the canonical encoding of the value
  a lenient parser (Python's json: last duplicate wins) reads from them, where one exists;
- ``kept``: the change is outside the signed payload; the original signature stays valid.

Every variant is written into a copy of the bundle; `open_bundle`, `Library.open` and
`handbook verify` must all refuse it with FormatError and a message that says why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT, run_cli

from handbook import FormatError, Library
from handbook.bundle import canonical
from handbook.bundle.canonical import MAX_DEPTH, MAX_SAFE_INTEGER
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import MANIFEST, MAX_MANIFEST_BYTES, Manifest
from handbook.bundle.signing import (
    MANIFEST_TAG,
    SIGNING_KEY_ENV,
    TRUSTED_KEYS_ENV,
    b64encode,
    public_key_of,
    sign,
    signing_input,
    verify,
)
from handbook_build import load_config
from handbook_build.pipeline import build

PUBLIC_KEY = public_key_of(KEY)
EXAMPLE = ROOT / "examples" / "skills" / "mkdocs.yml"
EPOCH = "1767225600"
SIGNED_AT = b',"signed":'

TALLY = {"tried": 0, "accepted": 0}
ACCEPTED: list[str] = []


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)
    monkeypatch.delenv(SIGNING_KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("noncanonical") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.delenv("CI", raising=False)
        mp.delenv(SIGNING_KEY_ENV, raising=False)
        mp.delenv(TRUSTED_KEYS_ENV, raising=False)
        build(load_config(EXAMPLE), out, KEY)
    return Path(os.path.realpath(out))


@pytest.fixture(scope="module")
def good(built: Path) -> bytes:
    data = (built / MANIFEST).read_bytes()
    assert (
        data.startswith(b'{"signatures":[{') and data.count(SIGNED_AT) == 1 and data.endswith(b"}}")
    )
    return data


@pytest.fixture
def bundle(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(built, copy)
    return copy


# -- building variants ------------------------------------------------------------------------


def split(manifest: bytes) -> tuple[bytes, bytes]:
    """(signatures array, signed payload) bytes of a canonical manifest."""
    start = manifest.index(SIGNED_AT)
    return manifest[len(b'{"signatures":') : start], manifest[start + len(SIGNED_AT) : -1]


def signature_over(encoded: bytes) -> dict[str, str]:
    """A signature entry over exactly these payload bytes (not re-encoded)."""
    return {
        "keyid": PUBLIC_KEY.keyid,
        "sig": b64encode(KEY.sign(signing_input(MANIFEST_TAG, None, encoded=encoded))),
    }


def assemble(entries: list[dict[str, str]], signed: bytes) -> bytes:
    """A manifest laid out canonically around `signed` (whatever its bytes)."""
    return (
        b'{"signatures":'
        + json.dumps(entries, separators=(",", ":")).encode()
        + SIGNED_AT
        + signed
        + b"}"
    )


@dataclasses.dataclass(frozen=True)
class Variant:
    data: bytes
    claimed: bytes
    """The payload bytes the signature in `data` is valid over."""
    entry: dict[str, str]


SignedEdit = Callable[[bytes], bytes]
WholeEdit = Callable[[bytes], bytes]


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    why: str
    """A regex the refusal's message must match: it says why."""
    signed_edit: SignedEdit | None = None
    whole_edit: WholeEdit | None = None
    sig: str = "raw"
    """raw, canonical (for a signed edit) or kept (for a whole edit)."""

    @property
    def id(self) -> str:
        return f"{self.name}[{self.sig}]"

    def make(self, good: bytes) -> Variant:
        sigs, signed = split(good)
        if self.whole_edit is not None:
            assert self.sig == "kept"
            entry = json.loads(sigs)[0]
            return Variant(self.whole_edit(good), signed, entry)
        assert self.signed_edit is not None
        edited = self.signed_edit(signed)
        assert edited != signed, f"{self.name}: the edit changed nothing"
        if self.sig == "raw":
            entry = signature_over(edited)
            return Variant(assemble([entry], edited), edited, entry)
        assert self.sig == "canonical"
        value = json.loads(edited)  # lenient: the last duplicate wins, NaN and floats pass
        entry = sign(KEY, MANIFEST_TAG, value)  # the product's own signer: over canonical(value)
        return Variant(assemble([entry], edited), canonical.dumps(value), entry)


def replace(old: bytes, new: bytes) -> SignedEdit:
    def edit(data: bytes) -> bytes:
        assert data.count(old) == 1, f"{old!r} is not in the payload exactly once"
        return data.replace(old, new)

    return edit


def append_key(key: bytes, value: bytes) -> SignedEdit:
    """A key after `version` (so still in sorted order) at the end of the payload."""
    return lambda data: data[:-1] + b',"' + key + b'":' + value + b"}"


def reencode(transform: Callable[[dict[str, Any]], Any], **dumps: Any) -> SignedEdit:
    return lambda data: json.dumps(
        transform(json.loads(data)), ensure_ascii=False, **dumps
    ).encode()


def _version_first(value: dict[str, Any]) -> dict[str, Any]:
    return {"version": value["version"], **{k: v for k, v in value.items() if k != "version"}}


def _files_reversed(value: dict[str, Any]) -> dict[str, Any]:
    return {**value, "files": dict(reversed(list(value["files"].items())))}


def _entry_keys_reversed(value: dict[str, Any]) -> dict[str, Any]:
    return {
        **value,
        "files": {
            p: {"sha256": e["sha256"], "bytes": e["bytes"]} for p, e in value["files"].items()
        },
    }


def nested(depth: int, open_: bytes = b"[", close: bytes = b"]") -> bytes:
    return open_ * depth + close * depth


def nested_objects(depth: int) -> bytes:
    return b'{"a":' * (depth - 1) + b"{}" + b"}" * (depth - 1)


def _top_unsorted(data: bytes) -> bytes:
    sigs, signed = split(data)
    return b'{"signed":' + signed + b',"signatures":' + sigs + b"}"


def _top_duplicate_signed(data: bytes) -> bytes:
    """Two `signed` keys: a reader that takes the first sees another library."""
    sigs, signed = split(data)
    evil = signed.replace(b'"library":"plant-skills"', b'"library":"evil-skills"')
    return b'{"signatures":' + sigs + SIGNED_AT + evil + SIGNED_AT + signed + b"}"


def _top_duplicate_signatures(data: bytes) -> bytes:
    sigs, signed = split(data)
    return b'{"signatures":[],"signatures":' + sigs + SIGNED_AT + signed + b"}"


def _pretty(data: bytes) -> bytes:
    return json.dumps(json.loads(data), indent=2, sort_keys=True).encode()


def _deep_signatures(data: bytes) -> bytes:
    sigs, signed = split(data)
    return (
        b'{"signatures":' + sigs[:-1] + b"," + nested(MAX_DEPTH) + b"]" + SIGNED_AT + signed + b"}"
    )


LIB = b'"library":"plant-skills"'
DOCS = b'"docs":3'
NOT_CANONICAL = r"not canonical JSON"
TOO_BIG = MAX_SAFE_INTEGER + 1
DEPTH_MSG = rf"nested deeper than {MAX_DEPTH} levels"
# The payload is at depth 2 (manifest, signed); a value added to it starts at depth 3.
JUST_TOO_DEEP = MAX_DEPTH - 1

SPECS: list[Spec] = [
    # duplicate keys
    Spec("duplicate-key-same-value", r"duplicate key 'docs'", replace(DOCS, DOCS + b"," + DOCS)),
    Spec(
        "duplicate-key-same-value",
        r"duplicate key 'docs'",
        replace(DOCS, DOCS + b"," + DOCS),
        sig="canonical",
    ),
    Spec(
        "duplicate-key-evil-first",
        r"duplicate key 'library'",
        replace(LIB, b'"library":"evil-skills",' + LIB),
    ),
    Spec(
        "duplicate-key-evil-first",
        r"duplicate key 'library'",
        replace(LIB, b'"library":"evil-skills",' + LIB),
        sig="canonical",
    ),
    Spec(
        "duplicate-key-evil-last",
        r"duplicate key 'library'",
        replace(LIB, LIB + b',"library":"evil-skills"'),
    ),
    Spec(
        "duplicate-key-evil-last",
        r"duplicate key 'library'",
        replace(LIB, LIB + b',"library":"evil-skills"'),
        sig="canonical",
    ),
    Spec(
        "duplicate-file-entry",
        r"duplicate key 'catalog.json'",
        lambda d: d.replace(
            b'"files":{', b'"files":{"catalog.json":{"bytes":1,"sha256":"' + b"0" * 64 + b'"},', 1
        ),
    ),
    Spec(
        "duplicate-top-signatures",
        r"duplicate key 'signatures'",
        whole_edit=_top_duplicate_signatures,
        sig="kept",
    ),
    Spec(
        "duplicate-top-signed",
        r"duplicate key 'signed'",
        whole_edit=_top_duplicate_signed,
        sig="kept",
    ),
    # whitespace
    Spec("pretty-printed-whole", NOT_CANONICAL, whole_edit=_pretty, sig="kept"),
    Spec("pretty-printed-payload", NOT_CANONICAL, reencode(lambda v: v, indent=2, sort_keys=True)),
    Spec(
        "pretty-printed-payload",
        NOT_CANONICAL,
        reencode(lambda v: v, indent=2, sort_keys=True),
        sig="canonical",
    ),
    Spec("trailing-newline", NOT_CANONICAL, whole_edit=lambda d: d + b"\n", sig="kept"),
    Spec("trailing-crlf", NOT_CANONICAL, whole_edit=lambda d: d + b"\r\n", sig="kept"),
    Spec("leading-space", NOT_CANONICAL, whole_edit=lambda d: b" " + d, sig="kept"),
    Spec(
        "space-after-colon-outside-payload",
        NOT_CANONICAL,
        whole_edit=lambda d: d.replace(SIGNED_AT, b',"signed": '),
        sig="kept",
    ),
    Spec("space-after-colon", NOT_CANONICAL, replace(DOCS, b'"docs": 3')),
    Spec("space-after-colon", NOT_CANONICAL, replace(DOCS, b'"docs": 3'), sig="canonical"),
    Spec("space-after-comma", NOT_CANONICAL, replace(b',"files":', b', "files":')),
    Spec("newline-in-payload", NOT_CANONICAL, lambda d: b"{\n" + d[1:]),
    Spec("tab-before-value", NOT_CANONICAL, replace(DOCS, b'"docs":\t3'), sig="canonical"),
    # key order
    Spec("unsorted-top-keys", NOT_CANONICAL, whole_edit=_top_unsorted, sig="kept"),
    Spec("unsorted-payload-keys", NOT_CANONICAL, reencode(_version_first, separators=(",", ":"))),
    Spec(
        "unsorted-payload-keys",
        NOT_CANONICAL,
        reencode(_version_first, separators=(",", ":")),
        sig="canonical",
    ),
    Spec(
        "unsorted-file-paths",
        NOT_CANONICAL,
        reencode(_files_reversed, separators=(",", ":")),
        sig="canonical",
    ),
    Spec(
        "unsorted-entry-keys",
        NOT_CANONICAL,
        reencode(_entry_keys_reversed, separators=(",", ":")),
        sig="canonical",
    ),
    # a byte order mark
    Spec("utf8-bom", r"BOM", whole_edit=lambda d: b"\xef\xbb\xbf" + d, sig="kept"),
    Spec("bom-before-payload", r"not strict JSON", lambda d: b"\xef\xbb\xbf" + d),
    # non-numbers and floats
    Spec("nan", r"NaN is not allowed", replace(DOCS, b'"docs":NaN')),
    Spec("infinity", r"Infinity is not allowed", replace(DOCS, b'"docs":Infinity')),
    Spec("minus-infinity", r"-Infinity is not allowed", replace(DOCS, b'"docs":-Infinity')),
    Spec("float-docs", r"float 3\.0 is not allowed", replace(DOCS, b'"docs":3.0')),
    Spec("float-exponent", r"float 3e0 is not allowed", replace(DOCS, b'"docs":3e0')),
    Spec(
        "float-file-bytes",
        r"float \d+\.0 is not allowed",
        lambda d: re.sub(rb'("bytes":\d+)', rb"\1.0", d, count=1),
    ),
    Spec("float-one", r"float 1\.0 is not allowed", append_key(b"zz", b"1.0")),
    Spec("float-minus-zero", r"float -0\.0 is not allowed", replace(DOCS, b'"docs":-0.0')),
    # integers outside [0, 2^53-1], and integer spellings
    Spec(
        "integer-2^53",
        rf"integer {TOO_BIG} is outside \[0, 2\^53-1\]",
        replace(DOCS, b'"docs":%d' % TOO_BIG),
    ),
    Spec(
        "integer-2^64-file-bytes",
        rf"integer {2**64} is outside \[0, 2\^53-1\]",
        lambda d: re.sub(rb'"bytes":\d+', b'"bytes":%d' % 2**64, d, count=1),
    ),
    Spec(
        "integer-5000-digits",
        r"not strict JSON.*(digits|limit)",
        replace(DOCS, b'"docs":' + b"9" * 5000),
    ),
    Spec("negative-integer", r"integer -3 is outside \[0, 2\^53-1\]", replace(DOCS, b'"docs":-3')),
    Spec(
        "negative-integer",
        r"integer -3 is outside \[0, 2\^53-1\]",
        replace(DOCS, b'"docs":-3'),
        sig="canonical",
    ),
    Spec(
        "negative-file-bytes",
        r"integer -1 is outside",
        lambda d: re.sub(rb'"bytes":\d+', b'"bytes":-1', d, count=1),
        sig="canonical",
    ),
    Spec("minus-zero", NOT_CANONICAL, replace(DOCS, b'"docs":-0'), sig="canonical"),
    Spec("leading-zero", r"not strict JSON", replace(DOCS, b'"docs":03')),
    # strings: surrogates, encodings, escapes, normalization
    Spec(
        "lone-high-surrogate", r"lone surrogate", replace(LIB, b'"library":"plant-skills\\ud800"')
    ),
    Spec("lone-low-surrogate", r"lone surrogate", replace(LIB, b'"library":"plant-skills\\udc00"')),
    Spec("lone-surrogate-in-key", r"lone surrogate", append_key(b"\\ud800", b"1")),
    Spec(
        "surrogate-as-cesu-8-bytes",
        r"not UTF-8",
        replace(LIB, b'"library":"plant-skills\xed\xa0\x80"'),
    ),
    Spec("overlong-utf8", r"not UTF-8", replace(LIB, b'"library":"plant-skills\xc0\xaf"')),
    Spec(
        "non-nfc-library",
        r"not NFC-normalized",
        replace(LIB, '"library":"plant-skills-cafe\u0301"'.encode()),
    ),
    Spec(
        "non-nfc-library",
        r"not NFC-normalized",
        replace(LIB, '"library":"plant-skills-cafe\u0301"'.encode()),
        sig="canonical",
    ),
    Spec(
        "non-nfc-version",
        r"not NFC-normalized",
        replace(b'"version":"1.0.0"', '"version":"1.0.0-e\u0301"'.encode()),
        sig="canonical",
    ),
    Spec("non-nfc-escaped", NOT_CANONICAL, replace(LIB, b'"library":"plant-skills-cafe\\u0301"')),
    Spec(
        "nfc-but-escaped",
        NOT_CANONICAL,
        replace(LIB, b'"library":"plant-skills-caf\\u00e9"'),
        sig="canonical",
    ),
    Spec(
        "escaped-ascii",
        NOT_CANONICAL,
        replace(LIB, b'"library":"plant\\u002dskills"'),
        sig="canonical",
    ),
    Spec(
        "escaped-slash", NOT_CANONICAL, replace(LIB, b'"library":"plant\\/skills"'), sig="canonical"
    ),
    Spec(
        "uppercase-hex-escape",
        NOT_CANONICAL,
        replace(LIB, b'"library":"plant-skills\\u001F"'),
        sig="canonical",
    ),
    Spec("non-ascii-key", r"is not ASCII", append_key("zé".encode(), b"1"), sig="canonical"),
    # depth
    Spec(
        "nested-lists-just-too-deep",
        DEPTH_MSG,
        append_key(b"zz", nested(JUST_TOO_DEEP)),
        sig="canonical",
    ),
    Spec(
        "nested-objects-just-too-deep",
        DEPTH_MSG,
        append_key(b"zz", nested_objects(JUST_TOO_DEEP)),
        sig="canonical",
    ),
    Spec("nested-in-unsigned-part", DEPTH_MSG, whole_edit=_deep_signatures, sig="kept"),
    Spec("nested-100000-deep", DEPTH_MSG, append_key(b"zz", nested(100_000))),
    # size
    Spec(
        "over-the-size-limit",
        rf"{MAX_MANIFEST_BYTES:,}-byte limit",
        append_key(b"zz", b'"' + b"a" * MAX_MANIFEST_BYTES + b'"'),
        sig="canonical",
    ),
    Spec(
        "over-the-size-limit-whitespace",
        rf"{MAX_MANIFEST_BYTES:,}-byte limit",
        whole_edit=lambda d: d + b" " * MAX_MANIFEST_BYTES,
        sig="kept",
    ),
]


def test_variant_ids_are_unique() -> None:
    ids = [spec.id for spec in SPECS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


# -- the refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_noncanonical_manifest_is_refused(spec: Spec, good: bytes, bundle: Path) -> None:
    variant = spec.make(good)
    assert variant.data != good
    # the signature is valid over what the variant claims: only non-canonicity can refuse it
    assert verify([variant.entry], None, [PUBLIC_KEY], encoded=variant.claimed) == [
        PUBLIC_KEY.keyid
    ]
    (bundle / MANIFEST).write_bytes(variant.data)
    TALLY["tried"] += 1
    problems: list[str] = []
    for how, opener in (
        ("Manifest.from_bytes", lambda: Manifest.from_bytes(variant.data)),
        ("open_bundle", lambda: open_bundle(bundle, [PUBLIC], hash_all=True)),
        ("Library.open", lambda: Library.open(bundle, [PUBLIC])),
    ):
        try:
            opener()
        except FormatError as exc:
            message = str(exc)
            if not message.startswith(f"{MANIFEST}:") or not re.search(
                spec.why, message, re.DOTALL
            ):
                problems.append(
                    f"{how}: refused, but the message does not say why ({spec.why!r}): {message[:300]}"
                )
        except Exception as exc:
            problems.append(
                f"{how}: raised {type(exc).__name__}, not FormatError: {str(exc)[:300]}"
            )
        else:
            problems.append(f"{how}: ACCEPTED")
    run = run_cli("verify", str(bundle), "--key", PUBLIC)
    if (
        run.exit_code != 1
        or "refused:" not in run.stderr
        or not re.search(spec.why, run.stderr, re.DOTALL)
    ):
        problems.append(f"handbook verify: exit {run.exit_code}, stderr {run.stderr[:300]!r}")
    if any("ACCEPTED" in p for p in problems) or run.exit_code == 0:
        TALLY["accepted"] += 1
        ACCEPTED.append(spec.id)
    assert not problems, "\n".join(problems)


# -- controls: the same machinery accepts a canonical manifest ------------------------------------


def test_good_manifest_is_accepted(good: bytes, bundle: Path) -> None:
    open_bundle(bundle, [PUBLIC], hash_all=True)
    run = run_cli("verify", str(bundle), "--key", PUBLIC)
    assert run.exit_code == 0 and run.lines[-1] == "ok", run.stderr


def test_raw_signing_matches_the_product_signer(good: bytes) -> None:
    """Ed25519 is deterministic: signing the canonical payload bytes as they stand gives
    the build's own signature, so `raw` signatures are made the way the product makes them."""
    sigs, signed = split(good)
    assert [signature_over(signed)] == json.loads(sigs)
    assert sign(KEY, MANIFEST_TAG, json.loads(signed)) == json.loads(sigs)[0]


def test_resigned_canonical_change_is_accepted(good: bytes, bundle: Path) -> None:
    """A canonical change (an `expires` far ahead), signed again the same way as the
    variants: accepted. So the refusals above come from the bytes' form, not the signing."""
    _, signed = split(good)
    value = json.loads(signed)
    value["expires"] = "2099-01-01T00:00:00Z"
    payload = canonical.dumps(value)
    data = assemble([signature_over(payload)], payload)
    assert data == canonical.dumps(
        {"signatures": [sign(KEY, MANIFEST_TAG, value)], "signed": value}
    )
    (bundle / MANIFEST).write_bytes(data)
    opened = open_bundle(bundle, [PUBLIC], hash_all=True)
    assert opened.manifest.signed.expires == "2099-01-01T00:00:00Z" and opened.signed_by == (
        PUBLIC_KEY.keyid,
    )
    run = run_cli("verify", str(bundle), "--key", PUBLIC)
    assert run.exit_code == 0, run.stderr


def test_depth_limit_is_exact(good: bytes, bundle: Path) -> None:
    """One level less than the refused variants passes the depth check: the signed key
    this reader does not know is accepted and kept (the format's version policy)."""
    spec = Spec(
        "at-the-depth-limit", "", append_key(b"zz", nested(JUST_TOO_DEEP - 1)), sig="canonical"
    )
    (bundle / MANIFEST).write_bytes(spec.make(good).data)
    opened = open_bundle(bundle, [PUBLIC], hash_all=True)
    assert "zz" in opened.manifest.signed.unrecognized
    assert opened.manifest.to_bytes() == (bundle / MANIFEST).read_bytes()


# -- canonical, validly signed, but impossible times ----------------------------------------------
# Not a canonicity problem: the bytes are canonical and the signature is good, but the
# signed times only match the shape of a UTC time. The reader's contract is still a
# FormatError (a BundleError) naming the field, and `handbook verify` saying "refused:".


def _resigned_with(good: bytes, bundle: Path, **fields: str) -> None:
    _, signed = split(good)
    value = {**json.loads(signed), **fields}
    (bundle / MANIFEST).write_bytes(
        canonical.dumps({"signatures": [sign(KEY, MANIFEST_TAG, value)], "signed": value})
    )


IMPOSSIBLE_TIMES = [
    "2026-02-30T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "0000-01-01T00:00:00Z",
]


@pytest.mark.parametrize("expires", IMPOSSIBLE_TIMES)
def test_impossible_expires_is_refused(good: bytes, bundle: Path, expires: str) -> None:
    _resigned_with(good, bundle, expires=expires)
    with pytest.raises(FormatError, match=r"manifest\.json: signed\.expires"):
        open_bundle(bundle, [PUBLIC], hash_all=True)
    run = run_cli("verify", str(bundle), "--key", PUBLIC)
    assert run.exit_code == 1 and "refused:" in run.stderr


@pytest.mark.parametrize("built_at", ["2026-13-01T00:00:00Z", "2026-01-01T99:00:00Z"])
def test_impossible_built_at_is_refused(good: bytes, bundle: Path, built_at: str) -> None:
    _resigned_with(good, bundle, built_at=built_at)
    with pytest.raises(FormatError, match=r"manifest\.json: signed\.built_at"):
        open_bundle(bundle, [PUBLIC], hash_all=True)


def test_leap_second_expiry_far_ahead_is_accepted(good: bytes, bundle: Path) -> None:
    """The control for the two above: a real (if odd) time passes."""
    _resigned_with(good, bundle, expires="9999-12-31T23:59:60Z")
    assert (
        open_bundle(bundle, [PUBLIC], hash_all=True).manifest.signed.expires
        == "9999-12-31T23:59:60Z"
    )


def test_zz_summary(capsys: pytest.CaptureFixture[str]) -> None:
    if TALLY["tried"] < len(SPECS):
        pytest.skip(f"only part of the module ran ({TALLY['tried']} of {len(SPECS)} variants)")
    with capsys.disabled():
        print(
            f"\n[noncanonical] {TALLY['tried']} manifest variants tried (each through Manifest.from_bytes, open_bundle,"
            f" Library.open and handbook verify), {TALLY['accepted']} accepted"
        )
    assert TALLY["accepted"] == 0, ACCEPTED


def test_a_deep_listed_path_is_refused_without_quadratic_work(good: bytes, bundle: Path) -> None:
    """Checking the folders of listed paths cost time and memory with the square of a
    path's depth: one 20,000-level path made a 40 KB manifest cost 390 MB before its
    signature was even looked at. Paths are capped first."""
    import tracemalloc

    value = json.loads(good)
    value["signed"]["files"]["a/" * 20_000 + "x"] = {"sha256": "0" * 64, "bytes": 1}
    data = canonical.dumps(value)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="deeper than 16 folders"):
            Manifest.from_bytes(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MB traced"
