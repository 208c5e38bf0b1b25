"""A write is filed under the bundle its caller is served, never under a library or an
audience its doc id names.

Before the fix, a proposal about an id the caller's bundle lacks took its library from
the id's qualifier as written: a public token proposing `access-example@staff:…` wrote
into the staff audience's inbox (shown in staff's pedigrees, counted against staff's
per-doc cap, so the cap also told which staff ids exist), and any made-up library name
(`totally-other-lib:foo.bar`) was stored as well. On a shelf, an unqualified new doc was
filed under no library at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, VALID_DOC, MakeLibrary

from handbook import Library, acting
from handbook.access.principals import Principals, add_token
from handbook.cli.serving import by_audience
from handbook.inbox.intake import Inbox
from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.store import Caps
from handbook.inbox.writable import Writable
from handbook.libraries.shelf import Shelf
from handbook_build import load_config
from handbook_build.pipeline import build

CAP = 2


@pytest.fixture(scope="module")
def access(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The access example built (unsigned) into a copy: its build folder."""
    root = tmp_path_factory.mktemp("access") / "access"
    shutil.copytree(ROOT / "examples" / "access", root, ignore=shutil.ignore_patterns("build"))
    build(load_config(root / "mkdocs.yml"), root / "build" / "bundle", None)
    return root / "build"


def served(access: Path, tmp_path: Path) -> Writable:
    """The three audiences behind one inbox whose per-doc cap is `CAP`."""
    tokens = tmp_path / "tokens"
    add_token(tokens, "web")
    add_token(tokens, "ops", "staff")
    libraries = {
        p: Library.open(access / p, allow_unsigned=True)
        for p in ("bundle", "bundles/staff", "bundles/customer-acme")
    }
    router = by_audience(libraries, Principals.load(tokens))
    return Writable(router, Inbox(SQLiteStore(tmp_path / "inbox.db"), Caps(open_per_doc=CAP)))


def as_(principal: str, writable: Writable, verb: str, **arguments: Any) -> dict[str, Any]:
    """`verb` called in a request of `principal` (writes attributed to it)."""
    if verb != "get":
        arguments["principal"] = principal
    with acting(None, principal):
        return dict(getattr(writable, verb)(**arguments))


def test_a_qualifier_names_no_other_audience_nor_library(access: Path, tmp_path: Path) -> None:
    writable = served(access, tmp_path)
    revision = as_("ops", writable, "get", doc_id="procedure.override")["revision"]
    for n in range(CAP):  # staff fills its own cap on its doc
        wrote = as_(
            "ops", writable, "contradict",
            doc_id="procedure.override", revision=revision, basis=f"wrong, {n}",
        )  # fmt: skip
        assert wrote["library"] == "access-example@staff" and wrote["new"] is True
    full = as_(
        "ops", writable, "contradict", doc_id="procedure.override", revision=revision, basis="x"
    )
    assert full["error"]["code"] == "too_many_open"
    kept = writable.inbox.store.records()

    # the staff doc (its cap full), a staff id that never existed, another library: one answer
    asked = {
        hostile: as_("web", writable, "propose", doc_id=hostile, markdown="Skip it.", basis="b")
        for hostile in (
            "access-example@staff:procedure.override",
            "access-example@staff:procedure.overlide",
            "access-example@staff:new.doc",
            "totally-other-lib:foo.bar",
        )
    }
    for hostile, answer in asked.items():  # answers carry their size: an id of its length
        unknown = "q" * len(hostile)
        never = as_("web", writable, "contradict", doc_id=unknown, revision=revision, basis="b")
        assert json.dumps(answer).replace(hostile, unknown) == json.dumps(never), answer
    assert writable.inbox.store.records() == kept
    seen = as_("ops", writable, "get", doc_id="procedure.override")["pedigree"]["open_records"]
    assert {r["by"] for r in seen} == {"ops"}

    own = as_(
        "web", writable, "propose", doc_id="access-example:guide.new", markdown="m", basis="b"
    )
    assert own["library"] == "access-example@public" and own["doc"] == "guide.new"


def test_on_a_shelf_a_new_doc_is_filed_under_a_served_library(
    access: Path, make_library: MakeLibrary, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    build(load_config(make_library({"a.md": VALID_DOC.format(id="a")})), other, None)
    shelf = Shelf(
        [
            Library.open(access / "bundle", allow_unsigned=True),
            Library.open(other, allow_unsigned=True),
        ]
    )
    writable = Writable(shelf, Inbox(SQLiteStore(tmp_path / "inbox.db")))

    def propose(doc_id: str) -> dict[str, Any]:
        return dict(writable.propose(doc_id, "# New", "seen", principal="ops"))

    assert propose("test:guide.new")["library"] == "test"
    assert propose("access-example:guide.new")["library"] == "access-example@public"
    assert (
        propose("nowhere:guide.new")["error"]["message"]
        == "the library has no doc nowhere:guide.new"
    )
    unqualified = propose("guide.new")["error"]
    assert unqualified["field"] == "doc_id" and "access-example, test" in unqualified["message"]
    assert {r.library for r in writable.inbox.store.records()} == {"test", "access-example@public"}
