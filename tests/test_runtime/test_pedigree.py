"""A doc's pedigree, derived from its verified reviews at the time of the call.

The derivation is tested on the `Ledger` directly (confidence, staleness, suspicion,
states and their order); then on libraries built for real with a `reviews` setting and
opened with an injected clock (a doc that changes, an artifact that changes, retired
docs, the filters, pedigree in every answer); and last, the same pedigree through every
transport. No test reads the wall clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, MakeLibrary, live, run_cli
from reviewers import DAY, NAMES, T0, invalidation, keyid, review, reviews_option

from handbook import Library
from handbook.bundle.catalog import DocEntry
from handbook.pedigree.derived import Ledger, Policy
from handbook.pedigree.records import Invalidation, Record, Review
from handbook_build import load_config
from handbook_build.checks.reviews import write_record
from handbook_build.pipeline import build

R1, R2 = "1" * 64, "2" * 64
HORIZON = 30 * DAY


def entry(
    doc_id: str = "guide.setup", revision: str = R1, kind: str = "guide", **meta: Any
) -> DocEntry:
    return DocEntry(
        doc_id, kind, "Setup", "s", "unverified", (), (), meta, revision, "", 0, 0, "", ""
    )


def ledger(*records: Record, **policy: Any) -> Ledger:
    return Ledger(
        {keyid(name): name for name in NAMES},
        [r for r in records if isinstance(r, Review)],
        [r for r in records if isinstance(r, Invalidation)],
        Policy(**policy),
    )


def pedigree_of(
    *records: Record, doc: DocEntry | None = None, now: int = T0, **policy: Any
) -> dict[str, Any]:
    return ledger(*records, **policy).pedigree(doc or entry(), now)


def approve(name: str, at: int = T0, revision: str = R1, **kw: Any) -> Review:
    return review(name, "guide.setup", revision, "approve", at=at, **kw)


def contradict(name: str, at: int = T0, revision: str = R1, **kw: Any) -> Review:
    return review(name, "guide.setup", revision, "contradict", at=at, basis="wrong order", **kw)


# -- the derivation ---------------------------------------------------------------------------


def test_a_doc_nobody_reviewed_is_unreviewed_at_even_confidence() -> None:
    assert pedigree_of() == {"confidence": 0.5, "reviews": 0, "approvals": 0, "state": "unreviewed"}


def test_an_approval_vouches_for_the_revision_it_read() -> None:
    assert pedigree_of(approve("alice"), now=T0 + 3 * DAY + 5) == {
        "confidence": 0.67,
        "reviews": 1,
        "approvals": 1,
        "last_reviewed": {"at": "2026-03-01T09:00:00Z", "by": "alice", "verdict": "approve"},
        "staleness_days": 3,
        "state": "reviewed",
    }


@pytest.mark.parametrize(
    ("support", "against", "confidence"),
    [(0, 0, 0.5), (1, 0, 0.67), (2, 0, 0.75), (3, 0, 0.8), (0, 1, 0.25), (1, 1, 0.4), (2, 1, 0.5)],
)
def test_confidence_is_s_plus_1_over_s_plus_2c_plus_2(
    support: int, against: int, confidence: float
) -> None:
    """Disputes weigh double: one contradiction takes two approvals to outweigh."""
    names = iter(NAMES)
    records = [approve(next(names)) for _ in range(support)]
    records += [contradict(next(names)) for _ in range(against)]
    assert pedigree_of(*records)["confidence"] == confidence


def test_a_corroboration_supports_like_an_approval_but_is_not_one() -> None:
    corroborated = pedigree_of(review("alice", "guide.setup", R1, "corroborate"))
    assert (corroborated["confidence"], corroborated["approvals"]) == (0.67, 0)
    assert corroborated["staleness_days"] == 0


def test_a_contradiction_lowers_confidence_and_leaves_staleness_alone() -> None:
    now = T0 + 10 * DAY
    before = pedigree_of(approve("alice"), now=now)
    after = pedigree_of(approve("alice"), contradict("bob", T0 + 5 * DAY), now=now)
    assert after["confidence"] < before["confidence"]
    assert after["staleness_days"] == before["staleness_days"] == 10
    assert after["contradictions"] == [
        {"by": "bob", "at": "2026-03-06T09:00:00Z", "verdict": "contradict", "basis": "wrong order"}
    ]
    assert after["state"] == "contested"
    assert after["verify_first"] == "1 open contradiction(s): wrong order"


def test_time_passing_makes_a_doc_stale_and_leaves_confidence_alone() -> None:
    reviewed = ledger(approve("alice"), horizon=HORIZON)
    fresh, old = reviewed.pedigree(entry(), T0 + DAY), reviewed.pedigree(entry(), T0 + 31 * DAY)
    assert fresh["confidence"] == old["confidence"] == 0.67
    assert (fresh["staleness_days"], fresh["state"]) == (1, "reviewed")
    assert (old["staleness_days"], old["state"]) == (31, "stale")
    assert old["verify_first"] == "last re-checked 31 days ago"


def test_a_corroboration_renews_what_a_contradiction_never_does() -> None:
    """Staleness counts from the last approval or corroboration, whoever else spoke since."""
    now = T0 + 40 * DAY
    renewed = pedigree_of(
        approve("alice"), review("bob", "guide.setup", R1, "corroborate", at=T0 + 35 * DAY), now=now
    )
    disputed = pedigree_of(approve("alice"), contradict("bob", T0 + 35 * DAY), now=now)
    assert renewed["staleness_days"] == 5
    assert disputed["staleness_days"] == 40


def test_only_each_reviewers_latest_verdict_counts() -> None:
    changed_mind = pedigree_of(approve("alice"), contradict("alice", T0 + DAY))
    came_round = pedigree_of(contradict("alice"), approve("alice", T0 + DAY))
    repeated = pedigree_of(
        approve("alice"), approve("alice", T0 + DAY), approve("alice", T0 + 2 * DAY)
    )
    assert (changed_mind["confidence"], changed_mind["approvals"], changed_mind["state"]) == (
        0.25,
        0,
        "contested",
    )
    assert (came_round["confidence"], came_round["approvals"], came_round["state"]) == (
        0.67,
        1,
        "reviewed",
    )
    assert (repeated["confidence"], repeated["approvals"], repeated["reviews"]) == (0.67, 1, 1)


def test_a_doc_owners_approval_does_not_count_for_it() -> None:
    """Not towards confidence, approvals or staleness; a protected doc stays short."""
    owned = entry(kind="device", owners=["alice"])
    pedigree = pedigree_of(
        approve("alice"), doc=owned, required_approvals=1, protected_kinds=("device",)
    )
    assert pedigree["confidence"] == 0.5
    assert pedigree["approvals"] == 0
    assert "staleness_days" not in pedigree
    assert pedigree["state"] == "under_approved"
    assert pedigree["verify_first"] == "0 of the 1 approvals it needs"
    assert pedigree_of(approve("alice"), approve("bob"), doc=owned)["approvals"] == 1


def test_an_owners_review_alone_does_not_make_a_doc_reviewed() -> None:
    """HB804: an owner's review "is kept and shown, and never counts"; a doc nobody else
    reviewed is still unreviewed (and not `reviewed=true` in a listing)."""
    pedigree = pedigree_of(approve("alice"), doc=entry(owners=["alice"]))
    assert pedigree["last_reviewed"]["by"] == "alice"
    assert pedigree["state"] == "unreviewed"


def test_reviews_of_an_earlier_revision_do_not_count() -> None:
    pedigree = pedigree_of(approve("alice", revision=R2), doc=entry(revision=R1))
    assert (pedigree["confidence"], pedigree["approvals"], pedigree["reviews"]) == (0.5, 0, 0)


def test_a_doc_that_changed_after_its_last_review_is_suspect_until_reviewed_again() -> None:
    changed = entry(revision=R2)
    suspect = pedigree_of(approve("alice", revision=R1), doc=changed, now=T0 + DAY)
    cleared = pedigree_of(
        approve("alice", revision=R1), approve("bob", T0 + DAY, revision=R2), doc=changed
    )
    assert suspect["state"] == "suspect"
    assert suspect["verify_first"] == "the doc changed after its last review (2026-03-01)"
    assert suspect["last_reviewed"]["at"] == "2026-03-01T09:00:00Z"
    assert cleared["state"] == "reviewed"


def test_a_doc_about_an_artifact_that_changed_after_its_last_review_is_suspect() -> None:
    about = entry(about=["urn:device:other", "urn:device:ac200"])
    changed = invalidation("bob", "urn:device:ac200", changed_at=T0 + DAY)
    suspect = pedigree_of(approve("alice"), changed, doc=about)
    cleared = pedigree_of(approve("alice"), changed, approve("carol", T0 + 2 * DAY), doc=about)
    assert suspect["state"] == "suspect"
    assert (
        suspect["verify_first"]
        == "urn:device:ac200 changed (2026-03-02) after the doc's last review"
    )
    assert cleared["state"] == "reviewed"


def test_an_artifact_that_changed_before_the_last_review_makes_nothing_suspect() -> None:
    earlier = invalidation("bob", "urn:device:ac200", changed_at=T0 - DAY)
    assert (
        pedigree_of(approve("alice"), earlier, doc=entry(about="urn:device:ac200"))["state"]
        == "reviewed"
    )


def test_an_invalidation_of_another_artifact_makes_nothing_suspect() -> None:
    other = invalidation("bob", "urn:device:other", changed_at=T0 + DAY)
    assert (
        pedigree_of(approve("alice"), other, doc=entry(about="urn:device:ac200"))["state"]
        == "reviewed"
    )


def test_a_doc_never_reviewed_is_unreviewed_even_when_its_artifact_changed() -> None:
    changed = invalidation("bob", "urn:device:ac200", changed_at=T0)
    assert pedigree_of(changed, doc=entry(about="urn:device:ac200"))["state"] == "unreviewed"


PROTECTED = {"required_approvals": 2, "protected_kinds": ("device",), "horizon": HORIZON}


@pytest.mark.parametrize(
    ("records", "state"),
    [
        (["contradict", "invalidation", "one approval"], "contested"),
        (["invalidation", "one approval"], "suspect"),
        (["one approval"], "under_approved"),
        (["one approval", "another approval"], "stale"),
    ],
)
def test_states_come_in_order_contested_suspect_under_approved_stale(
    records: list[str], state: str
) -> None:
    """Each row takes away the cause of the state above it; everything below still holds."""
    made = {
        "contradict": review("bob", "device.ac200", R1, "contradict", at=T0 + DAY, basis="wrong"),
        "invalidation": invalidation("dave", "urn:device:ac200", changed_at=T0 + 2 * DAY),
        "one approval": review("alice", "device.ac200", R1, at=T0),
        "another approval": review("carol", "device.ac200", R1, at=T0),
    }
    device = entry("device.ac200", kind="device", about="urn:device:ac200")
    pedigree = pedigree_of(*(made[r] for r in records), doc=device, now=T0 + 40 * DAY, **PROTECTED)
    assert pedigree["state"] == state


def test_a_retired_doc_is_retired_whatever_its_reviews_say() -> None:
    retired = entry(retired="the AC200 is out of service", superseded_by="guide.ac300")
    pedigree = pedigree_of(contradict("bob"), doc=retired)
    assert pedigree["state"] == "retired"
    assert pedigree["superseded_by"] == "guide.ac300"
    assert pedigree["verify_first"] == (
        "the doc is retired (the AC200 is out of service): read guide.ac300 instead"
    )


def test_protection_by_keyword_ignores_case() -> None:
    doc = entry(kind="guide")._replace(keywords=("Safety",))
    pedigree = pedigree_of(doc=doc, required_approvals=1, protected_keywords=("safety",))
    assert (pedigree["approvals_required"], pedigree["state"]) == (1, "under_approved")


# -- built libraries -----------------------------------------------------------------------------

DOCS = {
    "setup.md": """\
        ---
        id: guide.setup
        title: Setting up the AC200
        kind: guide
        summary: Wiring and first start of the AC200 drive.
        owners: [carol]
        about: urn:device:ac200
        ---
        # Setting up the AC200

        ## Wiring

        Connect the RS-485 pair before power.
        """,
    "ac200.md": """\
        ---
        id: device.ac200
        title: AC200 drive
        kind: device
        summary: The AC200 variable-frequency drive.
        ---
        # AC200 drive

        Modbus word order is big-endian.
        """,
    "old.md": """\
        ---
        id: guide.setup-v1
        title: Setting up the AC200 (first edition)
        kind: guide
        summary: The first edition of the setup guide.
        superseded_by: guide.setup
        ---
        # Setting up, first edition

        Wiring as it was.
        """,
}


class Site:
    """A library with reviewers, built for real and opened at the time `now` says."""

    def __init__(self, config: Path) -> None:
        self.config, self.now = config, T0
        self.out = config.parent / "bundle"
        self.library = self.build()

    def build(self) -> Library:
        build(load_config(self.config), self.out, KEY)
        self.library = Library.open(self.out, [PUBLIC], clock=lambda: self.now)
        return self.library

    def revision(self, doc_id: str) -> str:
        return str(self.library.get(doc_id)["revision"])

    def add(self, *records: Record) -> Library:
        for record in records:
            write_record(self.config.parent / "reviews", record)
        return self.build()

    def edit(self, path: str, old: str, new: str) -> Library:
        doc = self.config.parent / "docs" / path
        doc.write_text(doc.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        return self.build()

    def pedigree(self, doc_id: str) -> dict[str, Any]:
        return dict(self.library.get(doc_id)["pedigree"])


@pytest.fixture
def site(make_library: MakeLibrary) -> Site:
    return Site(
        make_library(DOCS, reviews=reviews_option(protected={"kinds": ["device"]}, horizon="30d"))
    )


def test_a_reviewed_doc_that_changes_is_suspect_until_its_new_revision_is_reviewed(
    site: Site,
) -> None:
    first = site.revision("guide.setup")
    site.add(review("alice", "guide.setup", first))
    assert site.pedigree("guide.setup")["state"] == "reviewed"

    library = site.edit("setup.md", "before power", "before mains power")
    assert site.revision("guide.setup") != first
    assert site.pedigree("guide.setup")["state"] == "suspect"
    assert [d["id"] for d in library.list(suspect=True)["docs"]] == ["guide.setup"]

    site.now += DAY
    library = site.add(review("bob", "guide.setup", site.revision("guide.setup"), at=T0 + DAY))
    assert site.pedigree("guide.setup")["state"] == "reviewed"
    assert library.list(suspect=True)["docs"] == []


def test_the_suspect_filter_finds_a_suspect_doc_whose_state_is_contested(site: Site) -> None:
    """The state shows the most urgent reason; the filter asks one question of its own."""
    site.add(review("alice", "guide.setup", site.revision("guide.setup")))
    site.add(invalidation("bob", "urn:device:ac200", changed_at=T0 + DAY))
    library = site.add(
        review("carol", "guide.setup", site.revision("guide.setup"), "contradict", at=T0 - DAY)
    )
    assert site.pedigree("guide.setup")["state"] == "contested"
    assert [d["id"] for d in library.list(suspect=True)["docs"]] == ["guide.setup"]


def test_an_invalidated_artifact_makes_its_docs_suspect_until_a_later_review(site: Site) -> None:
    site.add(review("alice", "guide.setup", site.revision("guide.setup")))
    site.add(invalidation("bob", "urn:device:ac200", changed_at=T0 + DAY))
    assert site.pedigree("guide.setup")["state"] == "suspect"
    assert site.pedigree("device.ac200")["state"] == "under_approved"  # not about it

    site.add(
        review("bob", "guide.setup", site.revision("guide.setup"), "corroborate", at=T0 + 2 * DAY)
    )
    assert site.pedigree("guide.setup")["state"] == "reviewed"


def test_the_injected_clock_moves_staleness_and_nothing_else(site: Site) -> None:
    site.add(review("alice", "guide.setup", site.revision("guide.setup")))
    fresh = site.pedigree("guide.setup")
    site.now = T0 + 31 * DAY
    old = site.pedigree("guide.setup")
    assert (fresh["state"], fresh["staleness_days"]) == ("reviewed", 0)
    assert (old["state"], old["staleness_days"]) == ("stale", 31)
    assert {
        k: v for k, v in old.items() if k not in ("state", "staleness_days", "verify_first")
    } == {k: v for k, v in fresh.items() if k not in ("state", "staleness_days")}


def test_an_owners_review_is_shown_but_does_not_count(site: Site) -> None:
    site.add(review("carol", "guide.setup", site.revision("guide.setup")))
    pedigree = site.pedigree("guide.setup")
    assert pedigree["last_reviewed"]["by"] == "carol"
    assert (pedigree["approvals"], pedigree["confidence"]) == (0, 0.5)


def test_list_leaves_retired_docs_out_unless_asked(site: Site) -> None:
    listed = [d["id"] for d in site.library.list()["docs"]]
    everything = {d["id"]: d for d in site.library.list(include_retired=True)["docs"]}
    assert "guide.setup-v1" not in listed
    assert everything["guide.setup-v1"]["pedigree"] == {
        "confidence": 0.5,
        "reviews": 0,
        "approvals": 0,
        "state": "retired",
        "superseded_by": "guide.setup",
        "verify_first": "the doc is retired: read guide.setup instead",
    }
    assert site.pedigree("guide.setup-v1")["state"] == "retired"


def test_reviewed_filter_keeps_docs_whose_current_revision_has_a_review(site: Site) -> None:
    library = site.add(review("alice", "device.ac200", site.revision("device.ac200")))
    assert [d["id"] for d in library.list(reviewed=True)["docs"]] == ["device.ac200"]
    assert [d["id"] for d in library.list(reviewed=False)["docs"]] == ["guide.setup"]


def test_a_library_without_reviewers_shows_a_pedigree_only_for_retired_docs(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config = make_library(DOCS)
    build(load_config(config), tmp_path / "plain", KEY)
    library = Library.open(tmp_path / "plain", [PUBLIC], clock=lambda: T0)
    assert "pedigree" not in library.get("guide.setup")
    assert library.get("guide.setup-v1")["pedigree"]["state"] == "retired"
    assert library.list(suspect=True)["hint"] == (
        "The library has no reviews, so no doc is suspect: leave suspect out."
    )


def test_every_answer_naming_a_doc_carries_its_pedigree(site: Site) -> None:
    library = site.add(
        review("alice", "device.ac200", site.revision("device.ac200")),
        review(
            "bob",
            "device.ac200",
            site.revision("device.ac200"),
            "contradict",
            at=T0 + DAY,
            basis="little-endian",
        ),
    )
    site.now = T0 + 2 * DAY
    expected = site.pedigree("device.ac200")
    assert expected["state"] == "contested"
    listed = next(d for d in library.list()["docs"] if d["id"] == "device.ac200")
    hit = next(h for h in library.search("word order")["hits"] if h["id"] == "device.ac200")
    item = library.collect(ids=["device.ac200"])["items"][0]
    source = next(
        s
        for s in library.ask("What is the AC200 word order?")["sources"]
        if s["document_id"] == "device.ac200"
    )
    for answer in (listed, hit, item, source):
        assert answer["pedigree"] == expected


# -- every transport -------------------------------------------------------------------------------

TRANSPORT_CALLS: dict[str, dict[str, Any]] = {
    "knowledge_list": {"include_retired": True},
    "knowledge_get": {"doc_id": "guide.setup"},
    "knowledge_search": {"query": "AC200 wiring", "limit": 5},
    "knowledge_collect": {"ids": ["guide.setup", "device.ac200", "guide.setup-v1"]},
    "knowledge_ask": {"question": "How is the AC200 wired?", "correlation_id": "pedigree"},
}


@pytest.fixture
def reviewed_site(site: Site, monkeypatch: pytest.MonkeyPatch) -> Site:
    """`site` with a contested, a stale and a retired doc at T0 + 40 days; a library the
    CLI opens itself is opened at the site's time too."""
    site.add(
        review("alice", "device.ac200", site.revision("device.ac200")),
        review("bob", "guide.setup", site.revision("guide.setup"), "contradict", basis="no fuse"),
        invalidation("carol", "urn:device:ac200", changed_at=T0 + DAY),
    )
    site.now = T0 + 40 * DAY
    opened = Library.open
    monkeypatch.setattr(
        Library,
        "open",
        classmethod(lambda cls, *args, **kw: opened(*args, **{**kw, "clock": lambda: site.now})),
    )
    return site


def test_the_reviewed_site_has_a_doc_in_each_state(reviewed_site: Site) -> None:
    listed = reviewed_site.library.list(include_retired=True)["docs"]
    assert {d["id"]: d["pedigree"]["state"] for d in listed} == {
        "guide.setup": "contested",
        "device.ac200": "stale",
        "guide.setup-v1": "retired",
    }


@pytest.mark.parametrize("name", list(TRANSPORT_CALLS))
def test_every_transport_shows_the_same_pedigree(reviewed_site: Site, name: str) -> None:
    """Python, dispatch, HTTP (GET and POST), MCP, RPC, the CLI and a `RemoteLibrary`
    derive the same pedigree at the same time (the helpers of test_transports.py)."""
    from test_transports import cli_call, http_get, http_post, mcp_call, python_call, rpc_call

    from handbook import RemoteLibrary
    from handbook.serve.http import create_app
    from handbook.serve.mcp import http_app
    from handbook.tools.dispatch import call

    served, arguments = reviewed_site.library, TRANSPORT_CALLS[name]
    expected = python_call(served, name, arguments)
    assert "error" not in expected, expected
    assert "pedigree" in json.dumps(expected)
    with live(create_app(served, mcp=http_app(served))) as address:
        answers = {
            "dispatch": call(served, name, arguments),
            "http get": http_get(address, name, arguments),
            "http post": http_post(address, name, arguments),
            "mcp": mcp_call(address, name, arguments),
            "rpc": rpc_call(served, name, arguments),
            "cli": cli_call([reviewed_site.out], name, arguments),
            "remote": call(RemoteLibrary(f"http://{address[0]}:{address[1]}"), name, arguments),
        }
    assert [transport for transport, answer in answers.items() if answer != expected] == []


@pytest.mark.parametrize("flag", ["--suspect", "--reviewed", "--include-retired"])
def test_the_cli_takes_the_pedigree_filters_as_true_or_false(
    reviewed_site: Site, flag: str
) -> None:
    """As its help says (`true: only docs that …`), and as HTTP GET takes them."""
    run = run_cli(
        "list", flag, "true", "--bundle", str(reviewed_site.out), "--key", PUBLIC, "--json"
    )
    answer = json.loads(run.stdout)
    assert "error" not in answer, answer["error"]
    assert answer == reviewed_site.library.list(**{flag[2:].replace("-", "_"): True})
