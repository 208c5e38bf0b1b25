"""Ed25519 policy: which keys may be trusted and which signatures count.

Verification is `cryptography`'s (OpenSSL). OpenSSL verifies cofactorless and accepts
low-order public keys, so with such a key a forged signature verifies for any message;
`PublicKey.from_raw` must refuse those keys before they are ever trusted. These tests pin
that policy against the public Wycheproof and CCTV vectors.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from handbook.bundle import canonical, signing
from handbook.bundle.signing import PublicKey
from handbook.errors import KeyFormatError, SignatureError

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "ed25519"  # README: source, license

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
IDENTITY = bytes([1]) + bytes(31)
FORGED_SIG = IDENTITY + bytes(32)  # R = identity point, S = 0

# A fixed, ordinary key (Wycheproof's first group) and its standard base64.
RAW = bytes.fromhex("7d4d0e7f6153a69b6242b522abbee685fda4420f8834b108c3bdae369ef549fa")
B64 = "fU0Of2FTpptiQrUiq77mhf2kQg+INLEIw72uNp71Sfo="

PAYLOAD: dict[str, Any] = {
    "spec": "handbook/v2",
    "files": {"a.md": {"sha256": "0" * 64, "bytes": 3}},
    "docs": 1,
}
OTHER_TAG = "handbook/v2/other"


def load_vectors(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def low_order_encodings() -> list[bytes]:
    """The 14 low-order encodings: the 7 sign-cleared values, each with sign bit 0 and 1."""
    return sorted(
        {enc[:31] + bytes([enc[31] | sign]) for enc in signing._LOW_ORDER for sign in (0, 0x80)}
    )


def new_key() -> tuple[Ed25519PrivateKey, PublicKey]:
    pem, public = signing.generate_private_key()
    private = signing.load_private_key(pem)
    assert signing.public_key_of(private) == public
    return private, public


def sig_bytes(entry: dict[str, str]) -> bytes:
    return base64.b64decode(entry["sig"], validate=True)


def entry_with(keyid: str, raw_sig: bytes) -> dict[str, str]:
    return {"keyid": keyid, "sig": base64.b64encode(raw_sig).decode("ascii")}


def accepts(raw_key: bytes, sig: bytes, msg: bytes) -> bool:
    """Our policy: the key must load as a trusted key, then `cryptography` must verify."""
    try:
        key = PublicKey.from_raw(raw_key)
    except KeyFormatError:
        return False
    return key.verifies(sig, msg)


def cryptography_accepts(raw_key: bytes, sig: bytes, msg: bytes) -> bool:
    """`cryptography` on its own, with no key validation of ours."""
    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(sig, msg)
    except (InvalidSignature, ValueError):
        return False
    return True


# -- Wycheproof ----------------------------------------------------------------------------


def test_wycheproof_all_verdicts() -> None:
    """Every Wycheproof verdict holds: 'valid' verifies, 'invalid' does not (a key refused
    at load counts as not verifying)."""
    data = load_vectors("wycheproof_ed25519_test.json")
    assert data["numberOfTests"] == 151
    run = 0
    wrong: list[str] = []
    for group in data["testGroups"]:
        raw_key = bytes.fromhex(group["publicKey"]["pk"])
        for test in group["tests"]:
            run += 1
            assert test["result"] in ("valid", "invalid"), test
            got = accepts(raw_key, bytes.fromhex(test["sig"]), bytes.fromhex(test["msg"]))
            if got != (test["result"] == "valid"):
                wrong.append(
                    f"tcId {test['tcId']} ({test['comment'] or test['flags']}): expected {test['result']}"
                )
    assert run == 151
    assert wrong == []


# -- CCTV ----------------------------------------------------------------------------------
#
# cctv_ed25519vectors.json is a list of 914 objects {number, key, sig, msg, flags}: key (32
# bytes) and sig (64 bytes) are hex, msg is a text string signed as its UTF-8 bytes, and
# flags is a list drawn from low_order_A / low_order_R (the point itself has small order),
# low_order_component_A / _R (a torsion component), low_order_residue, non_canonical_A / _R
# and reencoded_k, or null for the one ordinary vector. The vectors carry no verdict: what
# is accepted depends on the verifier's policy. Ours: accepted iff PublicKey.from_raw loads
# the key AND cryptography verifies.
#
# Measured with cryptography 50.0.2 (OpenSSL): cryptography alone accepts 208 vectors; 122
# of those use a key flagged low_order_A, which is always one of the 14 low-order encodings
# and which from_raw refuses, leaving 208 - 122 = 86 accepted under our policy (all with a
# canonical, non-low-order key; the others are cofactorless-valid signatures by keys with a
# torsion component or with a low-order R, which signature schemes tolerate).
CCTV_ACCEPTED = 86


def cctv_vectors() -> list[dict[str, Any]]:
    data = load_vectors("cctv_ed25519vectors.json")
    assert len(data) == 914
    return list(data)


def cctv_args(vector: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    return bytes.fromhex(vector["key"]), bytes.fromhex(vector["sig"]), vector["msg"].encode("utf-8")


def test_cctv_acceptance_under_our_policy() -> None:
    """Exact accepted count, no low-order key among the accepted, and never more than
    `cryptography` alone accepts."""
    vectors = cctv_vectors()
    low_order = set(low_order_encodings())
    ours = {v["number"] for v in vectors if accepts(*cctv_args(v))}
    theirs = {v["number"] for v in vectors if cryptography_accepts(*cctv_args(v))}

    assert len(ours) == CCTV_ACCEPTED
    assert ours <= theirs
    for v in vectors:
        if v["number"] in ours:
            assert "low_order_A" not in (v["flags"] or []), v
            assert bytes.fromhex(v["key"]) not in low_order, v
    # What we refuse beyond cryptography is exactly the vectors with a low-order key.
    low_order_key = {v["number"] for v in vectors if bytes.fromhex(v["key"]) in low_order}
    assert theirs - ours == theirs & low_order_key


def test_cctv_low_order_and_non_canonical_keys_are_refused_at_load() -> None:
    """Every CCTV key flagged low_order_A or non_canonical_A fails PublicKey.from_raw, and
    the low_order_A keys are exactly the 14 low-order encodings."""
    vectors = cctv_vectors()
    flagged = [v for v in vectors if {"low_order_A", "non_canonical_A"} & set(v["flags"] or [])]
    assert flagged
    for v in flagged:
        with pytest.raises(KeyFormatError):
            PublicKey.from_raw(bytes.fromhex(v["key"]))
    low_order_keys = {
        bytes.fromhex(v["key"]) for v in vectors if "low_order_A" in (v["flags"] or [])
    }
    assert low_order_keys == set(low_order_encodings())


# -- low-order and non-canonical keys ------------------------------------------------------


def test_there_are_14_low_order_encodings() -> None:
    encodings = low_order_encodings()
    assert len(encodings) == 14
    assert all(len(e) == 32 for e in encodings)
    non_canonical = [
        e for e in encodings if int.from_bytes(e[:31] + bytes([e[31] & 0x7F]), "little") >= P
    ]
    assert len(non_canonical) == 4  # y = p and y = p + 1 (encodings of 0 and 1), each sign


@pytest.mark.parametrize("raw", low_order_encodings(), ids=lambda raw: raw.hex())
def test_low_order_keys_are_refused(raw: bytes) -> None:
    """Non-canonical ones (y >= p, or x = 0 with the sign bit set) may be refused for that
    reason instead; either way they never become trusted keys."""
    with pytest.raises(KeyFormatError, match=r"low-order|not a canonical encoding"):
        PublicKey.from_raw(raw)


def test_low_order_key_lets_cryptography_accept_a_forgery() -> None:
    """Why the load-time check exists: with the identity as public key, OpenSSL accepts
    "identity || zero S" for any message."""
    messages = [b"", b"handbook", signing.signing_input(signing.MANIFEST_TAG, PAYLOAD)]
    try:
        key = Ed25519PublicKey.from_public_bytes(IDENTITY)
        for message in messages:
            key.verify(FORGED_SIG, message)
    except (InvalidSignature, ValueError):
        pytest.skip("this cryptography/OpenSSL refuses the low-order forgery by itself")
    with pytest.raises(KeyFormatError, match="low-order"):
        PublicKey.from_raw(IDENTITY)


def test_verify_never_sees_a_low_order_key() -> None:
    """A forged manifest signature cannot get through trusted_keys + verify."""
    forged = [entry_with(signing.keyid(IDENTITY), FORGED_SIG)]
    with pytest.raises(KeyFormatError):
        signing.trusted_keys(["ed25519:" + base64.b64encode(IDENTITY).decode()], env=False)
    with pytest.raises(SignatureError):
        signing.verify(forged, PAYLOAD, [])


@pytest.mark.parametrize(
    "raw",
    [
        P.to_bytes(32, "little"),
        (P + 2).to_bytes(32, "little"),
        (P + 2).to_bytes(32, "little")[:31] + bytes([(P + 2).to_bytes(32, "little")[31] | 0x80]),
        (P + 18).to_bytes(32, "little"),
        (2**255 - 1).to_bytes(32, "little"),
        b"\xff" * 32,
    ],
    ids=lambda raw: raw.hex(),
)
def test_non_canonical_keys_are_refused(raw: bytes) -> None:
    """y >= p is another encoding of y - p; only one encoding of a key may be trusted."""
    with pytest.raises(KeyFormatError, match="not a canonical encoding"):
        PublicKey.from_raw(raw)


@pytest.mark.parametrize("length", [0, 1, 31, 33, 64])
def test_wrong_key_lengths_are_refused(length: int) -> None:
    with pytest.raises(KeyFormatError, match=f"{length} bytes"):
        PublicKey.from_raw(RAW[:length] if length <= 32 else RAW + bytes(length - 32))


def test_ordinary_key_loads() -> None:
    key = PublicKey.from_raw(RAW)
    assert key.raw == RAW
    assert key.keyid == hashlib.sha256(RAW).hexdigest()


# -- PublicKey.parse -----------------------------------------------------------------------


def test_parse_round_trips() -> None:
    text = "ed25519:" + B64
    key = PublicKey.parse(text)
    assert key.raw == RAW
    assert str(key) == text
    assert PublicKey.parse(str(key)) == key


def test_parse_trims_surrounding_whitespace() -> None:
    """Surrounding whitespace (as in an env var or key file) is not part of the key."""
    assert PublicKey.parse(f"  ed25519:{B64}\n").raw == RAW


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (B64, "must look like ed25519:"),
        ("ED25519:" + B64, "must look like ed25519:"),
        ("ed25519" + B64, "must look like ed25519:"),
        ("ssh-ed25519 " + B64, "must look like ed25519:"),
        ("ed25519:" + B64.rstrip("="), "not standard padded base64"),  # missing padding
        ("ed25519:" + B64.replace("+", "-"), "not standard padded base64"),  # urlsafe alphabet
        ("ed25519:" + B64 + "=", "base64"),  # excess padding
        ("ed25519:" + B64[:-2] + "p=", "not the canonical base64"),  # nonzero unused bits
        ("ed25519:" + B64[:-2] + "r=", "not the canonical base64"),
        ("ed25519:" + B64[:20] + "\n" + B64[20:], "not standard padded base64"),
        ("ed25519:" + B64[:20] + " " + B64[20:], "not standard padded base64"),
        ("ed25519: " + B64, "not standard padded base64"),
        ("ed25519:" + B64[:20] + "\u00e9" + B64[21:], "not standard padded base64"),
        ("ed25519:", "0 bytes"),
        ("ed25519:" + base64.b64encode(RAW[:31]).decode(), "31 bytes"),
        ("ed25519:" + base64.b64encode(RAW + b"\x00").decode(), "33 bytes"),
        ("ed25519:" + base64.b64encode(IDENTITY).decode(), "low-order"),
    ],
)
def test_parse_refuses(text: str, fragment: str) -> None:
    """Only `ed25519:` + the one standard padded base64 encoding of 32 good bytes."""
    with pytest.raises(KeyFormatError) as info:
        PublicKey.parse(text)
    assert fragment in str(info.value)


def test_b64_decode_strict_refuses_non_canonical_trailing_bits() -> None:
    """Same decoded bytes, different text: refused so a key or signature has one spelling."""
    assert base64.b64decode(B64[:-2] + "p=") == RAW  # lenient decoders accept it
    with pytest.raises(ValueError, match="canonical"):
        signing.b64decode_strict(B64[:-2] + "p=", "key")


# -- signing_input -------------------------------------------------------------------------


def test_signing_input_is_exact() -> None:
    tag = signing.MANIFEST_TAG
    expected = len(tag).to_bytes(2, "big") + tag.encode("ascii") + canonical.dumps(PAYLOAD)
    assert signing.signing_input(tag, PAYLOAD) == expected
    assert signing.signing_input("t", {"b": 1, "a": [True]}) == b'\x00\x01t{"a":[true],"b":1}'
    assert signing.signing_input(tag, None).startswith(b"\x00\x14handbook/v2/manifest")


def test_sign_entry_shape() -> None:
    private, public = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    assert set(entry) == {"keyid", "sig"}
    assert entry["keyid"] == hashlib.sha256(public.raw).hexdigest()
    assert len(sig_bytes(entry)) == 64
    assert public.verifies(sig_bytes(entry), signing.signing_input(signing.MANIFEST_TAG, PAYLOAD))


# -- verify --------------------------------------------------------------------------------


def test_verify_accepts_a_valid_signature() -> None:
    private, public = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    assert signing.verify([entry], PAYLOAD, [public]) == [public.keyid]


def test_verify_accepts_with_private_key_generated_directly() -> None:
    private = Ed25519PrivateKey.generate()
    public = signing.public_key_of(private)
    entry = signing.sign(private, OTHER_TAG, PAYLOAD)
    assert signing.verify([entry], PAYLOAD, [public], tag=OTHER_TAG) == [public.keyid]


def test_verify_refuses_untrusted_key() -> None:
    private, _ = new_key()
    _, trusted = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    with pytest.raises(SignatureError, match=r"0 valid signature\(s\) by trusted keys, 1 required"):
        signing.verify([entry], PAYLOAD, [trusted])


def test_verify_refuses_signature_under_claimed_trusted_keyid() -> None:
    """Naming a trusted key's id does not help a signature by another key."""
    private, _ = new_key()
    _, trusted = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    with pytest.raises(SignatureError):
        signing.verify([{"keyid": trusted.keyid, "sig": entry["sig"]}], PAYLOAD, [trusted])


def test_verify_refuses_other_tag() -> None:
    """Domain separation: a signature for another purpose is not a manifest signature."""
    private, public = new_key()
    entry = signing.sign(private, OTHER_TAG, PAYLOAD)
    with pytest.raises(SignatureError):
        signing.verify([entry], PAYLOAD, [public])
    with pytest.raises(SignatureError):
        signing.verify(
            [signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)], PAYLOAD, [public], tag=OTHER_TAG
        )


def test_verify_refuses_modified_payload() -> None:
    private, public = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    modified = {**PAYLOAD, "docs": 2}
    with pytest.raises(SignatureError):
        signing.verify([entry], modified, [public])


def _malleate(sig: bytes) -> bytes:
    s = int.from_bytes(sig[32:], "little") + L
    return sig[:32] + s.to_bytes(32, "little")


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda sig: sig[:63], id="truncated-63"),
        pytest.param(lambda sig: sig + b"\x00", id="extended-65"),
        pytest.param(lambda sig: sig[:32], id="R-only"),
        pytest.param(lambda sig: b"", id="empty"),
        pytest.param(_malleate, id="S-plus-L"),
        pytest.param(lambda sig: sig[:63] + bytes([sig[63] ^ 1]), id="bit-flip"),
    ],
)
def test_verify_refuses_mangled_signatures(mangle: Any) -> None:
    private, public = new_key()
    good = sig_bytes(signing.sign(private, signing.MANIFEST_TAG, PAYLOAD))
    bad = mangle(good)
    assert bad != good
    with pytest.raises(SignatureError):
        signing.verify([entry_with(public.keyid, bad)], PAYLOAD, [public])


def test_malleated_signature_is_refused_by_cryptography_itself() -> None:
    """S + L is the same signature mod L; OpenSSL's S < L check is what refuses it."""
    private, public = new_key()
    message = signing.signing_input(signing.MANIFEST_TAG, PAYLOAD)
    good = private.sign(message)
    assert int.from_bytes(good[32:], "little") < L
    assert public.verifies(good, message)
    assert not public.verifies(_malleate(good), message)


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _set_unused_bit(b64: str) -> str:
    """64 bytes end in one byte = two chars + "=="; the second char's low 4 bits are unused."""
    assert b64.endswith("==")
    return b64[:-3] + ALPHABET[ALPHABET.index(b64[-3]) | 1] + "=="


def _urlsafe(b64: str) -> str:
    return b64.replace("+", "-").replace("/", "_")


@pytest.mark.parametrize(
    "respell",
    [
        pytest.param(lambda b64: b64.rstrip("="), id="missing-padding"),
        pytest.param(_urlsafe, id="urlsafe"),
        pytest.param(lambda b64: b64[:40] + "\n" + b64[40:], id="newline"),
        pytest.param(lambda b64: b64[:40] + " " + b64[40:], id="space"),
        pytest.param(lambda b64: b64 + "\n", id="trailing-newline"),
        pytest.param(_set_unused_bit, id="trailing-bits"),
    ],
)
def test_verify_refuses_non_canonical_signature_base64(respell: Any) -> None:
    """A valid signature spelled any other way than standard padded base64 does not count."""
    private = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    public = signing.public_key_of(private)
    # Ed25519 is deterministic: pick the first payload whose signature text has + or /.
    payload, entry = next(
        (p, e)
        for p in ({**PAYLOAD, "docs": n} for n in range(100))
        if _urlsafe((e := signing.sign(private, signing.MANIFEST_TAG, p))["sig"]) != e["sig"]
    )
    assert signing.verify([entry], payload, [public]) == [public.keyid]
    text = respell(entry["sig"])
    assert text != entry["sig"]
    with pytest.raises(SignatureError):
        signing.verify([{"keyid": public.keyid, "sig": text}], payload, [public])


def test_verify_threshold_two_distinct_keys() -> None:
    (a, pa), (b, pb) = new_key(), new_key()
    entries = [
        signing.sign(a, signing.MANIFEST_TAG, PAYLOAD),
        signing.sign(b, signing.MANIFEST_TAG, PAYLOAD),
    ]
    assert sorted(signing.verify(entries, PAYLOAD, [pa, pb], threshold=2)) == sorted(
        [pa.keyid, pb.keyid]
    )


def test_verify_threshold_counts_a_key_once() -> None:
    """The same key's signature listed twice is still one signer."""
    (a, pa), (_, pb) = new_key(), new_key()
    entry = signing.sign(a, signing.MANIFEST_TAG, PAYLOAD)
    with pytest.raises(SignatureError, match=r"1 valid signature\(s\) by trusted keys, 2 required"):
        signing.verify([entry, dict(entry)], PAYLOAD, [pa, pb], threshold=2)
    assert signing.verify([entry, dict(entry)], PAYLOAD, [pa, pb]) == [pa.keyid]


def test_verify_same_signature_under_two_keyids_counts_once() -> None:
    (a, pa), (_, pb) = new_key(), new_key()
    entry = signing.sign(a, signing.MANIFEST_TAG, PAYLOAD)
    entries = [entry, {"keyid": pb.keyid, "sig": entry["sig"]}]
    assert signing.verify(entries, PAYLOAD, [pa, pb]) == [pa.keyid]
    with pytest.raises(SignatureError, match=r"1 valid signature\(s\)"):
        signing.verify(entries, PAYLOAD, [pa, pb], threshold=2)


def test_verify_skips_bad_entries_before_a_good_one() -> None:
    """A bad entry for a key does not stop a later good one for the same key."""
    private, public = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    bad = entry_with(public.keyid, bytes(64))
    assert signing.verify(
        [bad, {"keyid": public.keyid, "sig": "!!"}, entry], PAYLOAD, [public]
    ) == [public.keyid]


def test_verify_duplicate_trusted_keys_count_once() -> None:
    private, public = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    with pytest.raises(SignatureError):
        signing.verify([entry], PAYLOAD, [public, PublicKey.from_raw(public.raw)], threshold=2)


def test_verify_unsigned_message() -> None:
    _, public = new_key()
    with pytest.raises(SignatureError, match="unsigned"):
        signing.verify([], PAYLOAD, [public])


def test_verify_no_trusted_keys_message() -> None:
    private, _ = new_key()
    entry = signing.sign(private, signing.MANIFEST_TAG, PAYLOAD)
    with pytest.raises(SignatureError, match="no trusted keys"):
        signing.verify([entry], PAYLOAD, [])


@pytest.mark.parametrize("threshold", [0, -1])
def test_verify_refuses_threshold_below_one(threshold: int) -> None:
    """A threshold of 0 would accept anything; it is a programming error."""
    _, public = new_key()
    with pytest.raises(ValueError, match="threshold"):
        signing.verify([], PAYLOAD, [public], threshold=threshold)


# -- trusted_keys --------------------------------------------------------------------------


def test_trusted_keys_from_env_deduped(monkeypatch: pytest.MonkeyPatch) -> None:
    _, a = new_key()
    _, b = new_key()
    monkeypatch.setenv(signing.TRUSTED_KEYS_ENV, f"{a}, {b},{a},, ")
    assert signing.trusted_keys() == [a, b]


def test_trusted_keys_merges_given_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    _, a = new_key()
    _, b = new_key()
    monkeypatch.setenv(signing.TRUSTED_KEYS_ENV, f"{b},{a}")
    assert signing.trusted_keys([a, str(a)]) == [a, b]
    assert signing.trusted_keys([a], env=False) == [a]


def test_trusted_keys_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(signing.TRUSTED_KEYS_ENV, raising=False)
    assert signing.trusted_keys() == []
    monkeypatch.setenv(signing.TRUSTED_KEYS_ENV, " , ,")
    assert signing.trusted_keys() == []


@pytest.mark.parametrize(
    "bad",
    ["nonsense", "ed25519:" + base64.b64encode(bytes(32)).decode(), "ed25519:" + B64.rstrip("=")],
)
def test_trusted_keys_refuses_bad_env_entries(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    """One bad key in the environment is an error, not silently dropped."""
    monkeypatch.setenv(signing.TRUSTED_KEYS_ENV, f"ed25519:{B64},{bad}")
    with pytest.raises(KeyFormatError):
        signing.trusted_keys()
