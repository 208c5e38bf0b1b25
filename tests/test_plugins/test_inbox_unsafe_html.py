"""A proposal that would take the site's pages out of its hands is not kept: `handbook
inbox accept` writes the change, checks it, finds HB403 (an error by default) and puts
the file back as it was. Driven through test_inbox_cli.py's walkthrough (a real library
and a real SQLite inbox), with the payloads of issue 25: a `<base>` that moves Material's
scripts to another host, a `<meta http-equiv="refresh">` and an SVG `<set>` that makes a
link `javascript:`."""

from __future__ import annotations

import re

import pytest
from conftest import VALID_DOC, MakeLibrary
from reviewers import reviews_option
from test_inbox_cli import Site

PAYLOADS = {
    "base": '<base href="http://127.0.0.1:9/">',
    "refresh": '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
    "animate": "<svg><a href='#x'><set attributeName='href' to='javascript:alert(1)'/></a></svg>",
}


@pytest.fixture
def site(make_library: MakeLibrary, monkeypatch: pytest.MonkeyPatch) -> Site:
    config = make_library({"a.md": VALID_DOC.format(id="guide.a")}, reviews=reviews_option())
    monkeypatch.chdir(config.parent)
    return Site(config)


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_a_section_proposal_with_the_payload_is_refused_and_undone(site: Site, kind: str) -> None:
    doc = site.root / "docs" / "a.md"
    before = doc.read_bytes()
    written = site.write(
        "knowledge_propose",
        "support-bot",
        revision=site.library.get("guide.a")["revision"],
        section="Section",
        markdown=f"Text.\n\n{PAYLOADS[kind]}\n",
        basis="a better page",
    )
    run = site.inbox("accept", written["id"], key="bob")
    assert run.exit_code == 1, run.stdout
    assert "the proposal does not check, nothing was kept: a.md:" in run.stderr
    assert " HB403 " in run.stderr
    assert doc.read_bytes() == before
    assert [record["state"] for record in site.listed()] == ["open"]


def test_a_new_doc_proposal_with_every_payload_is_refused_and_not_written(site: Site) -> None:
    body = "\n\n".join(PAYLOADS.values())
    new = VALID_DOC.format(id="guide.new") + f"\n{body}\n"
    written = site.write(
        "knowledge_propose", "support-bot", doc_id="guide.new", markdown=new, basis="b"
    )
    run = site.inbox("accept", written["id"], key="bob")
    assert run.exit_code == 1, run.stdout
    assert "the proposal does not check, nothing was kept" in run.stderr
    assert re.findall(r"(guide/new\.md:\d+:\d+): HB403 ", run.stderr) == [
        "guide/new.md:13:1",
        "guide/new.md:15:1",
        "guide/new.md:17:19",
    ]
    assert not (site.root / "docs" / "guide" / "new.md").exists()
    assert not list((site.root / "docs").rglob(".*.inbox"))  # no temporary left either
