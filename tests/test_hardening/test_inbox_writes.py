"""Issue 25, items 2 and 4: what the inbox writes, and what it shows.

`handbook inbox accept` (and `review`, `invalidate`, which write the same review files)
never writes through a symbolic link planted in the repository: not one named like its
temporary file, not a linked folder on the way, not one swapped in while the accepted
change is checked (the undo). And what agents write can never drive the reviewer's
terminal: control characters are refused when a record is written (Python API and
HTTP), and a record already stored with them is shown escaped.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import VALID_DOC, MakeLibrary, live, run_cli
from reviewers import key_file, reviews_option

from handbook import Library
from handbook.inbox.intake import Inbox
from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.store import Caps, Stored
from handbook.inbox.writable import Writable
from handbook.serve.http import create_app
from handbook.tools.dispatch import call
from handbook_build import load_config, pipeline
from handbook_build.pipeline import build

SECRET = "the user's own file\n"


class Site:
    """A library with reviewers, its bundle, an inbox over it, and a folder outside it
    that holds the file an attacker wants overwritten."""

    def __init__(self, config: Path, outside: Path) -> None:
        self.config, self.root, self.outside = config, config.parent, outside
        self.store = self.root / "inbox.sqlite3"
        out = self.root / "bundle"
        build(load_config(config), out, None)
        self.library = Library.open(out, allow_unsigned=True)
        self.served = Writable(self.library, Inbox(SQLiteStore(self.store)))
        outside.mkdir()
        (outside / "secret.txt").write_text(SECRET)

    def write(self, tool: str, **arguments: Any) -> str:
        answer = call(self.served, tool, {"doc_id": "guide.a", **arguments}, "support-bot")
        assert "error" not in answer, answer
        return str(answer["id"])

    def revision(self) -> str:
        return str(self.library.get("guide.a")["revision"])

    def cli(self, *args: str) -> Any:
        return run_cli(
            *args, "--key", str(key_file(self.root, "bob")), "--config", str(self.config)
        )

    def accept(self, record: str, *extra: str) -> Any:
        return self.cli("inbox", "accept", record, *extra, "--inbox", str(self.store))

    def state(self) -> str:
        [record] = SQLiteStore(self.store).records(state=None)
        return record.state

    def outside_untouched(self) -> bool:
        return [p.name for p in self.outside.iterdir()] == ["secret.txt"] and (
            self.outside / "secret.txt"
        ).read_text() == SECRET


@pytest.fixture
def site(make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    config = make_library({"a.md": VALID_DOC.format(id="guide.a")}, reviews=reviews_option())
    monkeypatch.chdir(config.parent)
    return Site(config, tmp_path / "outside")


# -- item 2: no write through a planted link ------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "markdown", "checks"),
    [
        ("guide.a", "Text, and the step the field found missing.", True),
        ("guide.new", "# No frontmatter: this does not check\n", False),
    ],
)
def test_a_link_named_like_the_temporary_file_is_neither_followed_nor_removed(
    site: Site, doc: str, markdown: str, checks: bool
) -> None:
    """The attack as reported: the old accept wrote the proposal through
    `.<name>.inbox`, then said "nothing was kept" and moved the link into the doc's place."""
    path = site.root / "docs" / (doc.removeprefix("guide.") + ".md")
    if doc == "guide.new":
        path = site.root / "docs" / "guide" / "new.md"
        path.parent.mkdir()
    planted = path.with_name(f".{path.name}.inbox")
    planted.symlink_to(site.outside / "secret.txt")
    revision = {"revision": site.revision()} if doc == "guide.a" else {}
    record = site.write("knowledge_propose", doc_id=doc, markdown=markdown, basis="b", **revision)

    run = site.accept(record)

    assert site.outside_untouched()
    assert planted.is_symlink() and os.readlink(planted) == str(site.outside / "secret.txt")
    if checks:
        assert run.exit_code == 0, run.stderr
        assert not path.is_symlink() and "the step the field found missing" in path.read_text()
        assert site.state() == "accepted"
    else:
        assert run.exit_code == 1 and "the proposal does not check, nothing was kept" in run.stderr
        assert not os.path.lexists(path) and site.state() == "open"
    assert [p.name for p in path.parent.iterdir() if "tmp" in p.name] == []  # nothing left over


@pytest.mark.parametrize("where", [None, "guide/deeper/evil.md"])
def test_a_linked_folder_on_the_way_to_a_new_doc_is_refused_naming_it(
    site: Site, where: str | None
) -> None:
    link = site.root / "docs" / "guide"
    link.symlink_to(site.outside, target_is_directory=True)
    new = VALID_DOC.format(id="guide.evil")
    record = site.write("knowledge_propose", doc_id="guide.evil", markdown=new, basis="b")

    run = site.accept(record, *(["--path", where] if where else []))

    assert run.exit_code == 1
    assert f"{link} is a symbolic link (to {site.outside}); refusing to write through it" in (
        run.stderr
    )
    assert site.outside_untouched() and link.is_symlink() and site.state() == "open"


def test_the_undo_does_not_write_through_a_link_swapped_in_during_the_check(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accepted change is checked, and undone when it does not check: a link put in
    the doc's place meanwhile (here, by the seam that runs the check) is not written
    through by the undo, nor removed."""
    doc = site.root / "docs" / "a.md"
    record = site.write(
        "knowledge_propose", revision=site.revision(), markdown="New body.", basis="b"
    )
    real_check, calls = pipeline.check, []

    def swapping_check(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == 2:  # the check of the accepted change
            doc.unlink()
            doc.symlink_to(site.outside / "secret.txt")
        return real_check(*args)

    monkeypatch.setattr(pipeline, "check", swapping_check)
    run = site.accept(record)

    assert site.outside_untouched() and doc.is_symlink() and site.state() == "open"
    assert run.exit_code == 1 and len(calls) == 2
    assert f"{doc} is a symbolic link (to {site.outside / 'secret.txt'})" in run.stderr


@pytest.mark.parametrize("command", ["inbox accept", "review", "invalidate"])
def test_review_files_are_not_written_through_a_linked_reviews_folder(
    site: Site, command: str
) -> None:
    link = site.root / "reviews"
    link.symlink_to(site.outside, target_is_directory=True)
    if command == "inbox accept":
        record = site.write("knowledge_contradict", revision=site.revision(), basis="fails")
        run = site.accept(record)
    elif command == "review":
        run = site.cli("review", "guide.a", "--verdict", "approve", "--basis", "read it")
    else:
        run = site.cli("invalidate", "https://example.com/spec")

    assert site.outside_untouched() and link.is_symlink()
    assert run.exit_code == 1
    assert f"{link} is a symbolic link (to {site.outside}); refusing to write through it" in (
        run.stderr
    )
    if command == "inbox accept":
        assert site.state() == "open"


# -- item 4: what agents write cannot drive the reviewer's terminal -------------------------

HOSTILE = {
    "CSI that erases the line above": "Harmless text.\x1b[1A\x1b[2K",
    "OSC 52 that sets the clipboard": "ok\x1b]52;c;cm0gLXJmIH4K\x07",
    "C1 CSI that clears the screen": "ok\x9b2J",
    "a lone CR that hides what precedes it": "rm -rf ~\rHarmless text.",
    "DEL": "ok\x7f",
}


@pytest.fixture
def served(plant_floor_bundle: Path, tmp_path: Path) -> Writable:
    library = Library.open(plant_floor_bundle, allow_unsigned=True)
    return Writable(library, Inbox(SQLiteStore(tmp_path / "records.sqlite3"), Caps()))


def _arguments(served: Writable, field: str, text: str) -> tuple[str, dict[str, Any]]:
    doc = "device.acme.ac200"
    base: dict[str, Any] = {"doc_id": doc, "basis": "b"}
    if field == "markdown":
        return "knowledge_propose", {**base, "markdown": text}
    base["revision"] = served.get(doc)["revision"]
    value: Any = [text] if field == "evidence" else text
    return "knowledge_contradict", {**base, field: value}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("field", ["basis", "markdown", "evidence"])
def test_control_characters_are_refused_at_write_naming_the_field(
    served: Writable, field: str, text: str
) -> None:
    tool, arguments = _arguments(served, field, text)
    answer = call(served, tool, arguments, "support-bot")
    assert answer["error"]["code"] == "bad_arguments" and answer["error"]["field"] == field
    assert "control character U+" in answer["error"]["message"]
    assert served.inbox.store.records(state=None) == []


def test_control_characters_are_refused_over_http(served: Writable) -> None:
    _, arguments = _arguments(served, "basis", HOSTILE["OSC 52 that sets the clipboard"])
    with live(create_app(served, token="s3cret")) as address:
        post = urllib.request.Request(
            f"http://{address[0]}:{address[1]}/api/v1/contradict",
            data=json.dumps(arguments).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer s3cret"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(post, timeout=30)
        answer = json.loads(refused.value.read())
    assert refused.value.code == 400
    assert (answer["error"]["code"], answer["error"]["field"]) == ("bad_arguments", "basis")
    assert served.inbox.store.records(state=None) == []


def test_crlf_is_kept_as_lf_and_tabs_and_bidi_controls_are_stored(served: Writable) -> None:
    tool, arguments = _arguments(served, "markdown", "line one\r\n\tline two \u202eevil\r\n")
    answer = call(served, tool, arguments, "support-bot")
    assert "error" not in answer, answer
    [stored] = served.inbox.store.records(state=None)
    assert stored.payload["markdown"] == "line one\n\tline two \u202eevil\n"


RAW = ("\x1b", "\x9b", "\x07", "\r", "\u202e", "\u2066")


def test_a_stored_record_with_control_characters_is_shown_escaped(tmp_path: Path) -> None:
    """A record stored before writes were checked (planted here straight into the store)
    is shown by `handbook inbox list/show/export`, text and JSON, with every control
    character and bidirectional control escaped: the reviewer sees what accepting keeps."""
    store_path = tmp_path / "inbox.sqlite3"
    basis = "Harmless text.\x1b[1A\x1b[2K\x1b]52;c;cm0gLXJmIH4K\x07 \x9b2J \u202eevil\u202c"
    planted = Stored(
        "ab" * 32, "proposal", "test", "guide.\x1b[8mhidden", "principal:bot",
        {"basis": basis, "markdown": "# Title\r\nrm -rf ~\rHarmless.\u2066x\u2069\n"}, 1,
    )  # fmt: skip
    SQLiteStore(store_path).add(planted, Caps())
    inbox = ("--inbox", str(store_path))

    runs = {
        "list": run_cli("inbox", "list", *inbox),
        "show": run_cli("inbox", "show", "ab" * 32, *inbox),
        "list --json": run_cli("inbox", "list", "--json", *inbox),
        "show --json": run_cli("inbox", "show", "ab" * 32, "--json", *inbox),
        "export": run_cli("inbox", "export", *inbox),
    }

    for name, run in runs.items():
        assert run.exit_code == 0, (name, run.stderr)
        assert not [c for c in RAW if c in run.stdout], name
    assert (
        "Harmless text.\\x1b[1A\\x1b[2K\\x1b]52;c;cm0gLXJmIH4K\\x07 \\x9b2J" in runs["show"].stdout
    )
    assert "\\u202eevil\\u202c" in runs["show"].stdout
    assert "rm -rf ~\\x0dHarmless.\\u2066x\\u2069" in runs["show"].stdout
    assert "guide.\\x1b[8mhidden" in runs["list"].stdout
    for name in ("list --json", "show --json"):  # the same values, escaped as JSON
        shown = json.loads(runs[name].stdout)
        assert (shown[0] if name == "list --json" else shown)["record"]["basis"] == basis
    [event] = [json.loads(line) for line in runs["export"].stdout.splitlines()]
    assert event["payload"]["basis"] == basis


def test_a_refusal_that_quotes_a_stored_record_is_escaped(site: Site) -> None:
    """`accept` refuses a record about another library, naming it: escaped as well."""
    planted = Stored(
        "cd" * 32, "contradiction", "test\x1b]0;pwned\x07", "guide.a", "principal:bot",
        {"basis": "b", "revision": site.revision()}, 1,
    )  # fmt: skip
    SQLiteStore(site.store).add(planted, Caps())
    run = site.accept("cd" * 32)
    assert run.exit_code == 2 and "\x1b" not in run.stderr
    assert "is about library test\\x1b]0;pwned\\x07, not test" in run.stderr
