"""Reviews on the build side, through the CLI: `handbook review` and `handbook invalidate`
write signed records beside the docs, `handbook reviews` lists the queue, `handbook
check` names every record it cannot use (its file and the reason) and holds protected
docs to the policy, and only verified records reach the bundle's `reviews.json`.

Every finding of every HB8xx rule is also pinned verbatim by the fixture library
tests/fixtures/reviews-hostile (test_reviews_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, VALID_DOC, MakeLibrary, Run, run_cli
from reviewers import DAY, T0, invalidation, key_file, keyid, review, reviews_option

from handbook import Library
from handbook.bundle.manifest import utc_time
from handbook.pedigree.records import MAX_BASIS_CHARS, MAX_EVIDENCE, Record, Review, from_dict
from handbook_build import load_config
from handbook_build.checks.reviews import write_record
from handbook_build.errors import BuildError
from handbook_build.pipeline import build, check
from handbook_build.write.emit import entry_of

AT = utc_time(T0)
GUIDE = VALID_DOC.format(id="guide.a")
DEVICE = VALID_DOC.format(id="device.x").replace("kind: guide", "kind: device")


def doc(doc_id: str, **fields: str) -> str:
    """VALID_DOC with more frontmatter fields, written as given."""
    extra = "".join(f"\n{k}: {v}" for k, v in fields.items())
    return VALID_DOC.format(id=doc_id).replace("kind: guide", "kind: guide" + extra)


@pytest.fixture
def library(make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`library(docs, **reviews_policy)`: a library declaring alice, bob and carol, whose
    folder is the working directory (paths print as a reviewer sees them)."""

    def make(docs: dict[str, str], rules: dict[str, str] | None = None, **policy: Any) -> Path:
        options: dict[str, Any] = {"reviews": reviews_option(**policy)}
        if rules:
            options["rules"] = rules
        config = make_library(docs, **options)
        monkeypatch.chdir(config.parent)
        return config

    return make


def review_cli(
    name: str,
    doc_id: str,
    verdict: str = "approve",
    *args: str,
    at: str = AT,
    basis: str = "checked on a bench unit",
) -> Run:
    """`handbook review` signed with `name`'s key (kept in keys/, as `handbook keygen` writes it)."""
    keys = Path("keys")
    keys.mkdir(exist_ok=True)
    key = str(key_file(keys, name))
    return run_cli(
        "review", doc_id, "--verdict", verdict, "--basis", basis, "--key", key, "--at", at, *args
    )


def records() -> list[Record]:
    return [from_dict(json.loads(p.read_bytes())) for p in sorted(Path("reviews").glob("*.json"))]


def revision(config: Path, doc_id: str) -> str:
    """The revision a review of `doc_id` names today (what the build will put in the catalog)."""
    loaded = load_config(config)
    result = check(loaded)
    return next(entry_of(d, loaded).revision for d in result.docs if d.id == doc_id)


def findings() -> list[str]:
    """The finding lines of `handbook check` (without the summary)."""
    return run_cli("check").lines[:-1]


def keep(*made: Record) -> list[str]:
    """Write records into the reviews folder; their paths as findings name them."""
    return [f"../{write_record(Path('reviews'), r)}" for r in made]


# -- handbook review ------------------------------------------------------------------------


def test_review_signs_the_docs_current_revision_and_keeps_it_under_its_id(library: Any) -> None:
    config = library({"a.md": GUIDE})
    run = review_cli("bob", "guide.a")
    [record] = records()
    assert isinstance(record, Review)
    assert (record.doc, record.revision) == ("guide.a", revision(config, "guide.a"))
    assert (record.reviewer, record.issued_at, record.verdict) == (keyid("bob"), T0, "approve")
    assert (record.basis, record.section, record.library) == (
        "checked on a bench unit",
        None,
        "test",
    )
    assert run.lines == [
        f"approve of guide.a (revision {record.revision[:12]}) -> reviews/{record.id}.json"
    ]


def test_the_same_review_written_twice_is_one_file(library: Any) -> None:
    library({"a.md": GUIDE})
    assert review_cli("bob", "guide.a").lines == review_cli("bob", "guide.a").lines
    assert len(records()) == 1


def test_a_review_of_a_section_by_its_title_records_its_anchor(library: Any) -> None:
    library({"a.md": GUIDE})
    assert review_cli("bob", "guide.a", "corroborate", "--section", "Section").exit_code == 0
    assert [r.section for r in records()] == ["section"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "at", "message"),
    [
        (("dave", "guide.a"), AT, "is not a declared reviewer; add its public key ed25519:"),
        (("bob", "guide.nope"), AT, "the library has no doc 'guide.nope'"),
        (
            ("bob", "guide.a", "approve", "--section", "Nope"),
            AT,
            "guide.a has no section 'Nope'; its sections: section",
        ),
        (
            ("bob", "guide.a"),
            "2026-13-01",
            "'2026-13-01' is not a UTC time like 2026-12-01T09:30:00Z",
        ),
    ],
    ids=["undeclared-key", "unknown-doc", "unknown-section", "bad-time"],
)
def test_review_refuses_and_writes_nothing(
    library: Any, args: tuple[str, ...], at: str, message: str
) -> None:
    library({"a.md": GUIDE})
    run = review_cli(*args, at=at)
    assert run.exit_code == 2
    assert message in run.stderr
    assert not Path("reviews").exists()


def test_review_needs_a_library_that_declares_reviewers(
    make_library: MakeLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(make_library({"a.md": GUIDE}).parent)
    run = review_cli("bob", "guide.a")
    assert run.exit_code == 2
    assert "the library declares no reviewers" in run.stderr


@pytest.mark.parametrize(
    ("basis", "evidence"),
    [
        ("x" * (MAX_BASIS_CHARS + 1), 0),
        ("checked", MAX_EVIDENCE + 1),
        ("検" * MAX_BASIS_CHARS, MAX_EVIDENCE),
    ],
    ids=["basis", "evidence-count", "record-bytes"],
)
def test_review_refuses_a_record_over_a_cap_and_writes_nothing(
    library: Any, basis: str, evidence: int
) -> None:
    """Else the reviewer commits a record that every check then refuses (HB801). In the
    last case every field is within its cap, but the file would be over 16 KiB."""
    library({"a.md": GUIDE})
    references = [arg for n in range(evidence) for arg in ("--evidence", f"{n:03}" + "検" * 496)]
    run = review_cli("bob", "guide.a", "approve", *references, basis=basis)
    assert run.exit_code == 2, run.stdout
    assert not Path("reviews").exists()


# -- handbook invalidate --------------------------------------------------------------------


def test_invalidate_records_the_change_and_names_the_docs_about_it(library: Any) -> None:
    library({"a.md": doc("guide.a", about="urn:device:x"), "b.md": doc("guide.b")})
    run = run_cli(
        "invalidate", "urn:device:x", "--key", str(key_file(Path("."), "carol")), "--at", AT
    )
    [record] = records()
    assert run.lines == [
        f"urn:device:x changed -> reviews/{record.id}.json",
        "suspect until reviewed again: guide.a",
    ]
    assert (record.about, record.changed_at, record.reviewer) == (
        "urn:device:x",
        T0,
        keyid("carol"),
    )  # type: ignore[union-attr]


def test_invalidate_with_both_times_writes_the_same_record_every_time(library: Any) -> None:
    library({"a.md": doc("guide.a", about="urn:device:x")})
    carol = str(key_file(Path("."), "carol"))
    for _ in range(2):
        run = run_cli("invalidate", "urn:device:x", "--key", carol, "--at", AT, "--signed-at", AT)
        assert run.exit_code == 0
    [record] = records()
    assert (record.changed_at, record.issued_at) == (T0, T0)  # type: ignore[union-attr]
    late = run_cli(
        "invalidate", "urn:device:x", "--key", carol, "--at", "2030-01-01T00:00:00Z",
        "--signed-at", AT,
    )  # fmt: skip
    assert late.exit_code == 2 and "cannot be after the record is signed" in late.stderr


def test_invalidate_notes_when_no_doc_is_about_the_uri(library: Any) -> None:
    library({"a.md": GUIDE})
    run = run_cli("invalidate", "urn:device:x", "--key", str(key_file(Path("."), "carol")))
    assert run.lines[-1] == "note: no doc is about urn:device:x yet (docs name it in `about:`)"


# -- handbook reviews -----------------------------------------------------------------------

QUEUE_DOCS = {
    "a.md": doc("guide.contested"),
    "b.md": doc("guide.suspect", about="urn:device:x"),
    "c.md": DEVICE,
    "d.md": doc("guide.stale"),
    "e.md": doc("guide.unreviewed"),
    "f.md": doc("guide.fine"),
}


def test_reviews_lists_the_queue_most_urgent_first(library: Any) -> None:
    library(QUEUE_DOCS, protected={"kinds": ["device"]}, horizon="30d")
    review_cli("alice", "guide.contested")
    review_cli("bob", "guide.contested", "contradict")
    review_cli("alice", "guide.suspect")
    review_cli("alice", "guide.stale")
    review_cli("alice", "guide.fine", at=utc_time(T0 + 35 * DAY))
    carol = str(key_file(Path("keys"), "carol"))
    run_cli("invalidate", "urn:device:x", "--key", carol, "--at", utc_time(T0 + DAY))
    run = run_cli("reviews", "--json", "--at", utc_time(T0 + 40 * DAY))
    queue = json.loads(run.stdout)
    assert [(item["id"], item["state"], item["path"]) for item in queue] == [
        ("guide.contested", "contested", "a.md"),
        ("guide.suspect", "suspect", "b.md"),
        ("device.x", "under_approved", "c.md"),
        ("guide.stale", "stale", "d.md"),
        ("guide.unreviewed", "unreviewed", "e.md"),
    ]
    assert run.stderr == "6 docs: 1 contested, 1 suspect, 1 under approved, 1 stale, 1 unreviewed\n"


def test_reviews_annotates_the_docs_for_github(library: Any) -> None:
    library({"c.md": DEVICE}, protected={"kinds": ["device"]})
    run = run_cli("reviews", "--format", "github", "--at", AT)
    assert run.lines == [
        "::warning file=docs/c.md,line=1::device.x: under approved: 0 of the 1 approvals it needs"
    ]


# -- handbook check: a finding at the file of every record it cannot use --------------------


def test_a_record_by_an_undeclared_key_is_named_at_its_file(library: Any) -> None:
    library({"a.md": GUIDE})
    [path] = keep(review("dave", "guide.a", "0" * 64))
    assert findings() == [
        f"{path}:1:1: HB802 signed by key id {keyid('dave')[:16]}, which is not a declared "
        "reviewer; declare the reviewer under `reviews.reviewers`, or remove the file"
    ]


def test_a_record_with_a_bad_signature_is_named_at_its_file(library: Any) -> None:
    library({"a.md": GUIDE})
    signed_elsewhere = review("bob", "guide.a", "1" * 64).signature
    [path] = keep(review("bob", "guide.a", "0" * 64)._replace(signature=signed_elsewhere))
    assert findings() == [
        f"{path}:1:1: HB802 the signature does not verify with the key of reviewer "
        f"{keyid('bob')[:16]}: the file was changed after it was signed, or signed by another "
        "key; sign it again with `handbook review`, or remove the file"
    ]


def test_a_review_of_a_doc_the_library_lacks_is_named_at_its_file(library: Any) -> None:
    library({"a.md": GUIDE})
    [path] = keep(review("bob", "guide.gone", "0" * 64))
    assert findings() == [
        f"{path}:1:1: HB803 reviews doc 'guide.gone', which the library does not have; remove the file"
    ]


def test_a_review_by_an_owner_is_a_warning_at_its_file(library: Any) -> None:
    library({"a.md": doc("guide.a", owners="[alice]")})
    [path] = keep(review("alice", "guide.a", "0" * 64))
    assert findings() == [
        f"{path}:1:1: HB804 (warning) alice reviews guide.a, which names them in `owners`; "
        "a review must come from someone else to count"
    ]


@pytest.mark.parametrize(
    ("fields", "finding"),
    [
        (
            {"owners": "[mallory]"},
            "a.md:5:9: HB806 `owners` must list names of declared reviewers; 'mallory' is not one",
        ),
        (
            {"owners": "alice"},
            "a.md:5:9: HB806 `owners` must be a list of reviewer names, like `owners: [alice]`",
        ),
        (
            {"about": "[urn:device:x, AC200 manual]"},
            "a.md:5:8: HB806 `about` must list URIs (scheme:rest, like `urn:device:acme-ac200` or "
            "`https://…`); 'AC200 manual' is not one",
        ),
        ({"retired": "2026"}, "a.md:5:10: HB806 `retired` must be true or the reason, not int"),
        (
            {"superseded_by": "guide.gone"},
            "a.md:5:16: HB806 `superseded_by` names 'guide.gone', which the library does not have",
        ),
        ({"superseded_by": "guide.a"}, "a.md:5:16: HB806 `superseded_by` names the doc itself"),
    ],
    ids=["owners-unknown", "owners-type", "about", "retired", "successor", "self-successor"],
)
def test_a_wrong_pedigree_field_is_named_at_its_value(
    library: Any, fields: dict[str, str], finding: str
) -> None:
    library({"a.md": doc("guide.a", **fields)})
    assert findings() == [finding]


# -- the policy: protected docs short of approvals ------------------------------------------


SHORT = "c.md:1:1: HB805 {}device.x is protected and has 1 of the 2 approvals its current revision needs"


@pytest.mark.parametrize(
    ("mode", "exit_code", "finding"),
    [
        ("error", 1, SHORT.format("") + ": "),
        ("omit", 0, SHORT.format("(warning) ") + "; it is left out of the bundle: "),
        ("flag", 0, SHORT.format("(notice) ") + "; it ships flagged: "),
    ],
)
def test_check_holds_protected_docs_to_the_policy(
    library: Any, mode: str, exit_code: int, finding: str
) -> None:
    library(
        {"a.md": GUIDE, "c.md": DEVICE},
        protected={"kinds": ["device"]},
        required_approvals=2,
        unapproved=mode,
    )
    review_cli("alice", "device.x")
    review_cli("bob", "device.x", "reject")
    run = run_cli("check", "--explain")  # a notice shows only with --explain
    assert run.exit_code == exit_code
    assert (
        run.lines[0] == finding + "ask reviewers for `handbook review device.x --verdict approve`"
    )


def test_an_owners_approval_does_not_make_up_the_count(library: Any) -> None:
    device = DEVICE.replace("kind: device", "kind: device\nowners: [alice]")
    library({"c.md": device}, protected={"kinds": ["device"]}, unapproved="error")
    review_cli("alice", "device.x")
    assert [line.split(": ")[1].split()[0] for line in findings()] == ["HB804", "HB805"]
    review_cli("bob", "device.x")
    assert [line.split(": ")[1].split()[0] for line in findings()] == ["HB804"]


@pytest.mark.parametrize("mode", ["error", "omit", "flag"])
def test_build_fails_omits_or_flags_a_protected_doc_short_of_approvals(
    library: Any, tmp_path: Path, mode: str
) -> None:
    config = library(
        {"a.md": GUIDE, "c.md": DEVICE}, protected={"kinds": ["device"]}, unapproved=mode
    )
    out = tmp_path / "bundle"
    if mode == "error":
        with pytest.raises(BuildError):
            build(load_config(config), out, KEY)
        assert not out.exists()
        return
    build(load_config(config), out, KEY)
    built = Library.open(out, [PUBLIC], clock=lambda: T0)
    ids = [d["id"] for d in built.list()["docs"]]
    if mode == "omit":
        assert ids == ["guide.a"]
        assert built.get("device.x")["found"] is False
        assert {h["id"] for h in built.search("valid doc")["hits"]} == {"guide.a"}
    else:
        assert sorted(ids) == ["device.x", "guide.a"]
        assert built.get("device.x")["pedigree"]["state"] == "under_approved"


def test_an_omitted_doc_leaves_no_review_in_the_bundle(library: Any, tmp_path: Path) -> None:
    """A doc left out for want of approvals takes its reviews with it: its id and the
    reviewers' words must not reach a bundle that leaves it out."""
    config = library(
        {"a.md": GUIDE, "c.md": DEVICE},
        protected={"kinds": ["device"]},
        required_approvals=2,
        unapproved="omit",
    )
    assert review_cli("alice", "device.x", basis="the coil map matches unit 7").exit_code == 0
    assert review_cli("alice", "guide.a").exit_code == 0
    build(load_config(config), tmp_path / "bundle", KEY)
    shipped = (tmp_path / "bundle" / "reviews.json").read_text()
    assert "device.x" not in shipped and "coil map" not in shipped
    assert '"guide.a"' in shipped


def test_an_approved_protected_doc_builds_under_every_mode(library: Any, tmp_path: Path) -> None:
    config = library({"c.md": DEVICE}, protected={"kinds": ["device"]}, unapproved="error")
    review_cli("alice", "device.x")
    build(load_config(config), tmp_path / "bundle", KEY)
    pedigree = Library.open(tmp_path / "bundle", [PUBLIC], clock=lambda: T0).get("device.x")[
        "pedigree"
    ]
    assert (pedigree["state"], pedigree["approvals"], pedigree["approvals_required"]) == (
        "reviewed",
        1,
        1,
    )


# -- the bundle ----------------------------------------------------------------------------------


def test_only_verified_records_reach_the_bundle(library: Any, tmp_path: Path) -> None:
    """With the record rules relaxed so the build goes on, the unusable records are still
    left out: reviews.json holds the good review, the owner's (shown, never counted) and
    the invalidation, nothing else."""
    config = library(
        {"a.md": doc("guide.a", owners="[carol]")},
        rules={"HB801": "warn", "HB802": "warn", "HB803": "warn"},
    )
    review_cli("alice", "guide.a")
    review_cli("carol", "guide.a")
    good = {r.id for r in records()}
    changed = invalidation("bob", "urn:device:x", changed_at=T0)
    keep(
        changed,
        review("dave", "guide.a", revision(config, "guide.a")),
        review("bob", "guide.gone", "0" * 64),
        review("bob", "guide.a", "0" * 64, library="other"),
        review("bob", "guide.a", "0" * 64)._replace(
            signature=review("bob", "guide.a", "1" * 64).signature
        ),
    )
    Path("reviews/notes.json").write_text("{}", encoding="utf-8")
    build(load_config(config), tmp_path / "bundle", KEY)
    shipped = json.loads((tmp_path / "bundle" / "reviews.json").read_bytes())
    assert {from_dict(r).id for r in shipped["records"]} == good | {changed.id}
    assert shipped["reviewers"] == {keyid(n): n for n in ("alice", "bob", "carol")}
    assert shipped["policy"] == {
        "required_approvals": 1,
        "protected_kinds": [],
        "protected_keywords": [],
    }
