"""The docs root: what git cannot hold (symlinks, FIFOs, odd names, collisions) is made
here, in a temporary folder, and must be refused with its own code."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from conftest import VALID_DOC, MakeLibrary, run_cli

from handbook_build.read.source import Text, discover, read, unportable


def doc(doc_id: str) -> str:
    return VALID_DOC.format(id=doc_id)


def check_lines(config: Path) -> tuple[int, list[str]]:
    run = run_cli("check", "--config", str(config))
    return run.exit_code, run.lines[:-1]


def test_symlinks_inside_and_escaping(make_library: MakeLibrary, tmp_path: Path) -> None:
    config = make_library({"real.md": doc("real")})
    docs = config.parent / "docs"
    outside = tmp_path / "outside.md"
    outside.write_text(doc("outside"))
    (docs / "inside-link.md").symlink_to(docs / "real.md")
    (docs / "escape-link.md").symlink_to(outside)
    (docs / "dir-link").symlink_to(tmp_path, target_is_directory=True)
    (docs / "loop-link.md").symlink_to(docs / "loop-link.md")
    code, lines = check_lines(config)
    assert code == 1
    assert lines == [
        "dir-link:1:1: HB104 is a symlink that escapes the docs root; move the file into the docs root",
        "escape-link.md:1:1: HB104 is a symlink that escapes the docs root; move the file into the docs root",
        "inside-link.md:1:1: HB102 is a symlink; replace it with the file itself",
        "loop-link.md:1:1: HB102 is a symlink; replace it with the file itself",
    ]


def test_fifo_is_refused_and_never_opened(make_library: MakeLibrary) -> None:
    config = make_library({"a.md": doc("a")})
    os.mkfifo(config.parent / "docs" / "pipe.md")
    os.mkfifo(config.parent / "docs" / "pipe.txt")
    code, lines = check_lines(config)
    assert code == 1
    assert lines == [
        "pipe.md:1:1: HB103 is a special file (FIFO, socket or device); remove it from the docs root",
        "pipe.txt:1:1: HB103 is a special file (FIFO, socket or device); remove it from the docs root",
    ]


def test_read_refuses_a_fifo_swapped_in_after_discovery(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "late.md")
    found = read(tmp_path, "late.md")
    assert not isinstance(found, Text)
    assert found.code == "HB103"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("back\\slash.md", "name 'back\\\\slash.md' holds a character that is not portable"),
        ("colon:name.md", "name 'colon:name.md' holds a character that is not portable"),
        ("tab\tname.md", "name 'tab\\tname.md' holds a character that is not portable"),
        ("dir./a.md", "name 'dir.' ends with a dot or a space"),
        ("space /a.md", "name 'space ' ends with a dot or a space"),
        ("con.md", "name 'con.md' is reserved on Windows"),
        ("sub/NUL.md", "name 'NUL.md' is reserved on Windows"),
    ],
)
def test_unportable_names(make_library: MakeLibrary, name: str, reason: str) -> None:
    config = make_library({name: doc("x")})
    code, lines = check_lines(config)
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{name}:1:1: HB104 {reason}")
    assert lines[0].endswith("; rename the file")


def test_portable_names_pass() -> None:
    for name in ["a.md", "dir/sub-dir/file_name.v2.md", "ünïcode/日本.md", "console.md"]:
        assert unportable(name) is None, name


def test_case_and_normalization_collisions(make_library: MakeLibrary) -> None:
    nfc = unicodedata.normalize("NFC", "café.md")
    nfd = unicodedata.normalize("NFD", "café.md")
    config = make_library(
        {"Pump.md": doc("pump-a"), "pump.md": doc("pump-b"), nfc: doc("cafe-a"), nfd: doc("cafe-b")}
    )
    code, lines = check_lines(config)
    assert code == 1
    assert lines == [
        f"{nfc}:1:1: HB105 collides with {nfd} after case folding or Unicode normalization; rename one",
        "pump.md:1:1: HB105 collides with Pump.md after case folding or Unicode normalization; rename one",
    ]


def test_dotfiles_and_other_files_are_skipped(make_library: MakeLibrary) -> None:
    config = make_library(
        {"a.md": doc("a"), ".hidden.md": "broken", ".git/x.md": "broken", "img.png": b"\x89PNG"}
    )
    assert check_lines(config) == (0, [])
    assert discover(config.parent / "docs").paths == ["a.md"]


def test_bom_and_crlf_are_normalized(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"\xef\xbb\xbf---\r\nid: a\r\n---\r\nbody\r\nmore\r")
    found = read(tmp_path, "a.md")
    assert isinstance(found, Text)
    assert found.text == "---\nid: a\n---\nbody\nmore\n"


def test_not_utf8_points_at_the_byte(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"---\nid: a\n---\nline\nab" + b"\xc3\x28")
    found = read(tmp_path, "a.md")
    assert (
        str(found)
        == "a.md:5:3: HB101 is not UTF-8 (byte 0xc3 at offset 21); save the file as UTF-8"
    )
