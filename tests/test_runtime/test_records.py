"""Review and invalidation records: what verifies, what is refused and why.

A record counts only when a declared reviewer's key signed exactly its payload under its
own domain tag; a signature made for a manifest, a review or an invalidation never passes
for one of the others, whatever payload bytes it covers. A record's id is derived from
its content, and `from_dict` refuses every field of the wrong type or size with a
message naming it."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from reviewers import T0, invalidation, keyid, private, review

from handbook.bundle import canonical, signing
from handbook.bundle.signing import MANIFEST_TAG, PublicKey, public_key_of
from handbook.errors import SignatureError
from handbook.pedigree.records import (
    INVALIDATION_TAG,
    MAX_BASIS_CHARS,
    MAX_EVIDENCE,
    MAX_REF_CHARS,
    REVIEW_TAG,
    Invalidation,
    Record,
    RecordError,
    Review,
    from_dict,
    invalidation_payload,
    review_payload,
    sign,
    to_bytes,
    to_dict,
    verify,
)

REVISION = "ab" * 32
DECLARED = {keyid(name): public_key_of(private(name)) for name in ("alice", "bob")}


def payload_of(record: Record) -> dict[str, Any]:
    return review_payload(record) if isinstance(record, Review) else invalidation_payload(record)


def a_review(**fields: Any) -> Review:
    return review("alice", "guide.setup", REVISION, **fields)


def a_file(**payload: Any) -> dict[str, Any]:
    """A review file's JSON with `payload` fields replaced (None removes one)."""
    data = to_dict(a_review())
    data["payload"] = {k: v for k, v in {**data["payload"], **payload}.items() if v is not None}
    return data


# -- signatures -----------------------------------------------------------------------------


def test_a_signed_review_and_invalidation_verify() -> None:
    verify(a_review(), DECLARED)
    verify(invalidation("bob", "urn:device:ac200", changed_at=T0), DECLARED)


def test_a_flipped_signature_bit_is_refused() -> None:
    record = a_review()
    raw = bytearray(base64.b64decode(record.signature))
    raw[10] ^= 1
    forged = record._replace(signature=base64.b64encode(bytes(raw)).decode())
    with pytest.raises(RecordError) as refused:
        verify(forged, DECLARED)
    assert str(refused.value) == (
        f"the signature does not verify with the key of reviewer {keyid('alice')[:16]}"
    )


def test_a_field_changed_after_signing_is_refused() -> None:
    """The signature covers every field: a contradiction cannot be turned into an approval."""
    record = review("alice", "guide.setup", REVISION, "contradict")
    with pytest.raises(RecordError, match="does not verify"):
        verify(record._replace(verdict="approve"), DECLARED)


def test_another_reviewers_signature_under_the_named_key_id_is_refused() -> None:
    """Bob signs a review naming Alice as its reviewer: it is checked with Alice's key."""
    record = a_review()
    by_bob = base64.b64encode(
        private("bob").sign(signing.signing_input(REVIEW_TAG, payload_of(record)))
    )
    with pytest.raises(RecordError, match="does not verify"):
        verify(record._replace(signature=by_bob.decode()), DECLARED)


def test_a_signature_in_another_base64_spelling_is_refused() -> None:
    record = a_review()
    unpadded = record.signature.rstrip("=")
    with pytest.raises(RecordError, match="not standard padded base64"):
        verify(record._replace(signature=unpadded), DECLARED)


def test_a_record_by_an_undeclared_key_is_refused() -> None:
    record = review("dave", "guide.setup", REVISION)
    with pytest.raises(RecordError) as refused:
        verify(record, DECLARED)
    assert str(refused.value) == (
        f"signed by key id {keyid('dave')[:16]}, which is not a declared reviewer"
    )


def test_a_key_cannot_sign_a_record_naming_another_reviewer() -> None:
    unsigned = Review("", "test", "guide.setup", REVISION, "approve", "b", keyid("bob"), T0)
    with pytest.raises(RecordError, match="names another reviewer than the key that signs it"):
        sign(unsigned, private("alice"))


# -- domain separation: a signature for one purpose never passes for another --------------

RECORDS = {
    REVIEW_TAG: lambda: a_review(),
    INVALIDATION_TAG: lambda: invalidation("alice", "urn:device:ac200", changed_at=T0),
}


@pytest.mark.parametrize(
    ("made_for", "record_tag"),
    [
        (MANIFEST_TAG, REVIEW_TAG),
        (INVALIDATION_TAG, REVIEW_TAG),
        (MANIFEST_TAG, INVALIDATION_TAG),
        (REVIEW_TAG, INVALIDATION_TAG),
    ],
)
def test_a_signature_made_under_another_tag_never_verifies_as_a_record(
    made_for: str, record_tag: str
) -> None:
    """The same key over the same payload bytes, but for another purpose: refused."""
    record = RECORDS[record_tag]()
    replayed = signing.sign(private("alice"), made_for, payload_of(record))["sig"]
    with pytest.raises(RecordError, match="does not verify"):
        verify(record._replace(signature=replayed), DECLARED)


@pytest.mark.parametrize("record_tag", [REVIEW_TAG, INVALIDATION_TAG])
def test_a_record_signature_never_verifies_as_a_manifest_signature(record_tag: str) -> None:
    """A reviewer's key trusted for bundles still cannot make a record into a manifest."""
    record = RECORDS[record_tag]()
    entry = {"keyid": keyid("alice"), "sig": record.signature}
    trusted = [DECLARED[keyid("alice")]]
    assert signing.verify([entry], payload_of(record), trusted, tag=record_tag) == [keyid("alice")]
    with pytest.raises(SignatureError):
        signing.verify([entry], payload_of(record), trusted, tag=MANIFEST_TAG)


def test_an_invalidation_signature_replayed_on_a_review_is_refused() -> None:
    """Taken from a real invalidation record of the same reviewer."""
    other = invalidation("alice", "urn:device:ac200", changed_at=T0)
    with pytest.raises(RecordError, match="does not verify"):
        verify(a_review()._replace(signature=other.signature), DECLARED)


# -- ids --------------------------------------------------------------------------------------


def test_identical_reviews_are_one_record() -> None:
    """Same content, same id, same bytes: written twice, it is one file."""
    first, second = a_review(), a_review()
    assert first.id == second.id
    assert to_bytes(first) == to_bytes(second)
    assert from_dict(json.loads(to_bytes(first))).id == first.id


@pytest.mark.parametrize(
    "change",
    [{"at": T0 + 1}, {"verdict": "corroborate"}, {"basis": "other"}, {"section": "install"}],
)
def test_any_change_of_content_is_another_record(change: dict[str, Any]) -> None:
    assert a_review(**change).id != a_review().id


def test_the_id_is_derived_never_taken_from_the_file() -> None:
    record = from_dict({**to_dict(a_review()), "signature": "not even base64"})
    assert record.id == a_review().id


# -- caps -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"basis": "x" * (MAX_BASIS_CHARS + 1)}, "basis must be text of at most 2,000 characters"),
        (
            {"evidence": [f"urn:e:{n}" for n in range(MAX_EVIDENCE + 1)]},
            "evidence must be a list of at most 16 references",
        ),
        (
            {"evidence": ["x" * (MAX_REF_CHARS + 1)]},
            "evidence must be a list of at most 16 references",
        ),
        ({"section": "s" * (MAX_REF_CHARS + 1)}, "section must be text of at most 500 characters"),
    ],
    ids=["basis", "evidence-count", "evidence-length", "section"],
)
def test_a_field_over_its_cap_is_refused(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordError) as refused:
        from_dict(a_file(**payload))
    assert str(refused.value) == message


def test_the_caps_themselves_are_accepted() -> None:
    from_dict(
        a_file(
            basis="x" * MAX_BASIS_CHARS,
            evidence=["e" * MAX_REF_CHARS] * MAX_EVIDENCE,
            section="s" * MAX_REF_CHARS,
        )
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"basis": "x" * (MAX_BASIS_CHARS + 1)},
        {"evidence": tuple(f"urn:e:{n}" for n in range(MAX_EVIDENCE + 1))},
        {"evidence": ("検" * MAX_REF_CHARS,) * MAX_EVIDENCE, "basis": "検" * MAX_BASIS_CHARS},
    ],
    ids=["basis", "evidence-count", "record-bytes"],
)
def test_a_record_the_reader_would_refuse_cannot_be_signed(fields: dict[str, Any]) -> None:
    """One format for writer and reader: `sign` refuses what `from_dict` or the size cap
    (MAX_RECORD_BYTES, checked on the file before it is parsed) would refuse, so a
    reviewer never commits a record that every check then rejects. The last case has every
    field within its cap, yet its file is over MAX_RECORD_BYTES."""
    unsigned = Review("", "test", "guide.setup", REVISION, "approve", "b", keyid("alice"), T0)
    with pytest.raises(RecordError):
        sign(unsigned._replace(**fields), private("alice"))


# -- from_dict refuses every other shape --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], 'a record is {"type", "payload", "signature"} and nothing else'),
        (
            {**to_dict(a_review()), "id": "x"},
            'a record is {"type", "payload", "signature"} and nothing else',
        ),
        (
            {**to_dict(a_review()), "type": "manifest"},
            "type must be review or invalidation, not 'manifest'",
        ),
        ({**to_dict(a_review()), "payload": []}, "payload must be an object"),
        ({**to_dict(a_review()), "signature": None}, "signature must be text"),
        (a_file(extra=1), "payload has unknown fields extra"),
        (a_file(revision=None, basis=None), "payload lacks basis, revision"),
        (
            a_file(verdict="ok"),
            "verdict must be one of approve, corroborate, contradict, reject, not 'ok'",
        ),
        (a_file(doc=""), "doc must not be empty"),
        (a_file(doc=7), "doc must be text of at most 2,000 characters"),
        (a_file(revision="AB" * 32), "revision must be 64 lowercase hex digits"),
        (a_file(reviewer="alice"), "reviewer must be 64 lowercase hex digits"),
        (a_file(issued_at=1.5), "issued_at must be whole seconds since 1970 (an integer)"),
        (a_file(issued_at=True), "issued_at must be whole seconds since 1970 (an integer)"),
        (a_file(issued_at=-1), "issued_at must be whole seconds since 1970 (an integer)"),
        (a_file(issued_at=2**53), "issued_at must be whole seconds since 1970 (an integer)"),
        (
            a_file(issued_at="2026-03-01T09:00:00Z"),
            "issued_at must be whole seconds since 1970 (an integer)",
        ),
        (a_file(lang=""), "lang must not be empty"),
        (a_file(evidence="urn:e:1"), "evidence must be a list of at most 16 references"),
        (a_file(evidence=[1]), "evidence must be a list of at most 16 references"),
        (a_file(evidence=[""]), "evidence must be a list of at most 16 references"),
    ],
)
def test_from_dict_refuses_a_wrong_shape_naming_what_is_wrong(data: Any, message: str) -> None:
    with pytest.raises(RecordError) as refused:
        from_dict(data)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"about": "device ac200"}, "about must be a URI (scheme:rest), not 'device ac200'"),
        ({"about": "urn:x", "verdict": "approve"}, "payload has unknown fields verdict"),
        ({"changed_at": "yesterday"}, "changed_at must be whole seconds since 1970 (an integer)"),
    ],
)
def test_from_dict_refuses_a_wrong_invalidation(payload: dict[str, Any], message: str) -> None:
    data = to_dict(invalidation("alice", "urn:device:ac200", changed_at=T0))
    data["payload"] = {**data["payload"], **payload}
    with pytest.raises(RecordError) as refused:
        from_dict(data)
    assert str(refused.value) == message


def test_a_record_reads_back_as_it_was_written() -> None:
    for record in (
        a_review(section="install", lang="de", evidence=("urn:ticket:1",)),
        invalidation("bob", "https://example.com/fw/2.1", changed_at=T0, at=T0 + 60),
    ):
        assert from_dict(json.loads(to_bytes(record))) == record
        assert to_bytes(record) == canonical.dumps(to_dict(record)) + b"\n"


def test_an_invalidation_is_not_a_review_of_the_same_fields() -> None:
    """Kinds are separate records even where the payload keys could overlap."""
    record = invalidation("alice", "urn:device:ac200", changed_at=T0)
    assert isinstance(from_dict(to_dict(record)), Invalidation)
    with pytest.raises(RecordError, match="payload lacks"):
        from_dict({**to_dict(record), "type": "review"})


def test_the_public_key_of_a_reviewer_is_parsed_like_any_trusted_key() -> None:
    key = PublicKey.parse(str(public_key_of(private("alice"))))
    verify(a_review(), {key.keyid: key})
