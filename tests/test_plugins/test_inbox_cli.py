"""`handbook inbox`: the walkthrough of issue 18 on a real library and a real SQLite inbox.
An agent contradicts a doc, a reviewer accepts it, the review file lands in the docs
repository and the next build's bundle carries it; proposals become checked changes to
the docs tree; nobody decides their own record; the audit trail has every step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import VALID_DOC, MakeLibrary, run_cli
from reviewers import key_file, reviews_option

from handbook import Library
from handbook.inbox.intake import Inbox
from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.writable import Writable
from handbook.tools.dispatch import call
from handbook_build import load_config
from handbook_build.pipeline import build

GUIDE = VALID_DOC.format(id="guide.a")


class Site:
    """A library with reviewers, its bundle, and an inbox served over it."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.parent
        self.store = self.root / "inbox.sqlite3"
        self.build()

    def build(self) -> Library:
        out = self.root / "bundle"
        build(load_config(self.config), out, None)
        self.library = Library.open(out, allow_unsigned=True)
        self.served = Writable(self.library, Inbox(SQLiteStore(self.store)))
        return self.library

    def write(self, tool: str, principal: str, **arguments: Any) -> dict[str, Any]:
        answer = call(self.served, tool, {"doc_id": "guide.a", **arguments}, principal)
        assert "error" not in answer, answer
        return answer

    def inbox(self, *args: str, key: str | None = None) -> Any:
        extra = ["--key", str(key_file(Path("."), key))] if key else []
        return run_cli(
            "inbox", *args, *extra, "--inbox", str(self.store), *(
                ["--config", str(self.config)] if args[0] in ("accept", "reject") else []
            ),
        )  # fmt: skip

    def listed(self, state: str = "open") -> list[dict[str, Any]]:
        run = self.inbox("list", "--state", state, "--json")
        assert run.exit_code == 0, run.stderr
        return list(json.loads(run.stdout))


@pytest.fixture
def site(make_library: MakeLibrary, monkeypatch: pytest.MonkeyPatch) -> Site:
    config = make_library({"a.md": GUIDE}, reviews=reviews_option())
    monkeypatch.chdir(config.parent)
    return Site(config)


def test_an_accepted_contradiction_is_a_review_file_the_next_build_carries(site: Site) -> None:
    revision = site.library.get("guide.a")["revision"]
    written = site.write(
        "knowledge_contradict", "support-bot", revision=revision, basis="step 2 fails on v2"
    )
    [listed] = site.listed()
    assert (listed["id"], listed["by"], listed["state"]) == (
        written["id"], "principal:support-bot", "open",
    )  # fmt: skip

    run = site.inbox("accept", written["id"][:12], key="alice")
    assert run.exit_code == 0, run.stderr
    [review_file] = sorted((site.root / "reviews").glob("*.json"))
    assert run.stdout.startswith(f"accepted {written['id'][:12]} (contradiction of guide.a)")
    record = json.loads(review_file.read_text())["payload"]
    assert (record["verdict"], record["revision"]) == ("contradict", revision)
    assert record["basis"].startswith("step 2 fails on v2 (reported by support-bot")
    assert site.listed() == [] and site.listed("accepted")[0]["decided_by"] == "alice"

    pedigree = site.build().get("guide.a")["pedigree"]
    assert pedigree["state"] == "contested"
    assert pedigree["contradictions"][0]["by"] == "alice"

    export = site.inbox("export")
    events = [json.loads(line) for line in export.stdout.splitlines()]
    assert [(e["action"], e["by"]) for e in events] == [
        ("submitted", "principal:support-bot"),
        ("accepted", "alice"),
    ]
    assert events[0]["payload"]["basis"] == "step 2 fails on v2"


def test_an_accepted_section_proposal_changes_the_doc_and_still_checks(site: Site) -> None:
    revision = site.library.get("guide.a")["revision"]
    written = site.write(
        "knowledge_propose",
        "alice",
        revision=revision,
        section="Section",
        markdown="Text, then the step the field found missing.",
        basis="done this way on line 3",
    )
    own = site.inbox("accept", written["id"], key="alice")
    assert own.exit_code == 2 and "alice's own: another reviewer decides it" in own.stderr
    run = site.inbox("accept", written["id"], key="bob")
    assert run.exit_code == 0, run.stderr
    text = (site.root / "docs" / "a.md").read_text()
    assert "## Section\n\nText, then the step the field found missing.\n" in text
    assert text.startswith("---\nid: guide.a\n")
    assert run_cli("check", "--config", str(site.config)).exit_code == 0
    assert not list((site.root / "reviews").glob("*.json"))  # a change, not a review


def test_a_proposal_that_does_not_check_is_not_kept(site: Site) -> None:
    written = site.write(
        "knowledge_propose",
        "support-bot",
        doc_id="guide.new",
        markdown="# No frontmatter at all\n",
        basis="we need this page",
    )
    run = site.inbox("accept", written["id"], key="bob")
    assert run.exit_code == 1 and "the proposal does not check, nothing was kept" in run.stderr
    assert not (site.root / "docs" / "guide" / "new.md").exists()
    assert site.listed()[0]["state"] == "open"
    rejected = site.inbox("reject", written["id"], "--reason", "needs frontmatter", key="bob")
    assert rejected.exit_code == 0, rejected.stderr
    [shown] = site.listed("rejected")
    assert (shown["reason"], shown["decided_by"]) == ("needs frontmatter", "bob")
    again = site.inbox("reject", written["id"], "--reason", "twice", key="carol")
    assert again.exit_code == 1 and "already rejected by bob" in again.stderr


def test_a_proposed_new_doc_is_written_where_its_id_says(site: Site) -> None:
    new = VALID_DOC.format(id="guide.setup.first")
    written = site.write(
        "knowledge_propose", "support-bot", doc_id="guide.setup.first", markdown=new, basis="b"
    )
    run = site.inbox("accept", written["id"], key="carol")
    assert run.exit_code == 0, run.stderr
    assert (site.root / "docs" / "guide" / "setup" / "first.md").read_text() == new
    assert "guide.setup.first" in [d["id"] for d in site.build().list()["docs"]]


def test_a_stale_proposal_is_refused_at_accept(site: Site) -> None:
    revision = site.library.get("guide.a")["revision"]
    written = site.write(
        "knowledge_propose", "support-bot", revision=revision, markdown="New body.", basis="b"
    )
    doc = site.root / "docs" / "a.md"
    doc.write_text(doc.read_text().replace("Text.", "Text, edited by a person."))
    run = site.inbox("accept", written["id"], key="bob")
    assert run.exit_code == 2 and "changed since the proposal was written" in run.stderr
    assert "Text, edited by a person." in doc.read_text()
