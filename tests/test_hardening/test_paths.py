"""Paths and special files, at build and at load, beyond tests/test_plugins/test_source.py,
tests/test_runtime/test_canonical.py and the bundle tests of test_build.py.

At build (`discover`, `handbook check`, `handbook build`): trailing dots and spaces in
file names, NUL (impossible on POSIX: said and tested), names `check` accepts but the
bundle refuses, collisions of a file with a folder, symlinks to folders, in two-link
loops, dangling or to a FIFO, sockets, and hardlinks (a hardlink *is* a regular file:
accepted, its bytes copied into the bundle at build time).

At load: manifests signed by a trusted key that list unsafe or colliding paths are
refused by `check_path`, `Manifest.from_bytes` and `open_bundle` alike (so the refusal
never rests on the signature); a bundle folder holding a symlink (to a file, a folder,
in a loop), a FIFO, a socket or a hardlink in place of a listed file; files swapped for
links or FIFOs after the bundle was opened; the same over HTTP.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import socket
import tarfile
import unicodedata
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY, PUBLIC, ROOT, VALID_DOC, MakeLibrary, loopback_server, run_cli

from handbook import (
    BundleError,
    FormatError,
    HashMismatchError,
    Library,
    MissingFileError,
    UnlistedFileError,
)
from handbook.bundle.archive import unpack
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import MANIFEST, FileEntry, Manifest, check_path
from handbook.bundle.signing import MANIFEST_TAG, TRUSTED_KEYS_ENV, sign
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.read.source import Text, discover, read, unportable

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
SKILL_DOC = "---\nid: skill.x\ntitle: T\nkind: guide\nsummary: s\n---\n# T\n\n## S\n\nText.\n"


@pytest.fixture(autouse=True)
def _no_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY", raising=False)


def doc(doc_id: str) -> str:
    return VALID_DOC.format(id=doc_id)


def check_lines(config: Path) -> tuple[int, list[str]]:
    run = run_cli("check", "--config", str(config))
    return run.exit_code, run.stdout.split("\n")[:-2]  # not splitlines(): a name may hold U+0085


def findings(root: Path) -> list[str]:
    return [str(f) for f in discover(root).findings]


# == at build ====================================================================================


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("a.md.", "name 'a.md.' ends with a dot or a space"),
        ("a.md ", "name 'a.md ' ends with a dot or a space"),
        ("notes.txt.", "name 'notes.txt.' ends with a dot or a space"),
        ("sub/x\\y.md", "name 'x\\\\y.md' holds a character that is not portable"),
        ("sub./a.md", "name 'sub.' ends with a dot or a space"),
        ("lpt9.txt", "name 'lpt9.txt' is reserved on Windows"),
        ("del\x7f.md", "holds a character that is not portable"),
    ],
)
def test_unportable_file_names_are_refused_whatever_their_suffix(
    make_library: MakeLibrary, name: str, reason: str
) -> None:
    """Files that are not `.md` (resources-to-be, stray files) are checked too: a name
    ending in a dot or space cannot be created on Windows at all."""
    config = make_library({"a.md": doc("a"), name: doc("x")})
    code, lines = check_lines(config)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith(f"{name}:1:1: HB104 ") and reason in lines[0], (
        lines
    )


def test_nul_cannot_be_in_a_posix_name(tmp_path: Path) -> None:
    """NUL ends a path in the POSIX API, so no file on disk can hold one: Python refuses
    the name before any system call. The name checks refuse it anyway, for manifests
    and archives, which are not filesystems."""
    with pytest.raises(ValueError, match="null"):
        os.open(tmp_path / "a\x00b.md", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(ValueError, match="null"):
        os.mkfifo(tmp_path / "a\x00b")
    assert list(tmp_path.iterdir()) == []
    assert unportable("a\x00b.md") is not None
    assert check_path("a\x00b.md") == "holds a backslash, colon or control character"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(unicodedata.normalize("NFD", "café.txt"), id="NFD"),
        pytest.param("a\u0085b.txt", id="C1-control-NEL"),
        pytest.param("a\u009fb.txt", id="C1-control-APC"),
    ],
)
def test_check_refuses_what_the_bundle_cannot_hold(
    make_library: MakeLibrary, tmp_path: Path, name: str
) -> None:
    """`check` and `build` must agree: an attached file whose name a bundle cannot list
    (`check_path`) must be a finding of `check`, not an error of `build` after it passed."""
    config = make_library({"skill/SKILL.md": SKILL_DOC, f"skill/{name}": "x"})
    assert check_path(f"skill/{name}") is not None  # the bundle side refuses it
    built = run_cli("build", "--config", str(config), "--out", str(tmp_path / "out"))
    code, lines = check_lines(config)
    assert built.exit_code == 1  # the build does refuse it (FormatError from the publish step)
    assert code == 1 and any(f"skill/{name}:1:1: HB104" in line for line in lines), lines


def test_an_nfd_markdown_name_builds(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A doc's own file name is not a bundle path (content is stored by hash), so an NFD
    markdown name alone is accepted by both check and build."""
    monkeypatch.delenv("CI", raising=False)  # an unsigned build is refused in CI
    config = make_library({unicodedata.normalize("NFD", "café.md"): doc("cafe")})
    assert check_lines(config) == (0, [])
    assert run_cli("build", "--config", str(config), "--out", str(tmp_path / "out")).exit_code == 0


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param({"skill": "x", "Skill/a.md": "doc"}, id="file-vs-folder"),
        pytest.param({"notes.md": "doc", "NOTES.md/a.md": "doc"}, id="doc-vs-folder"),
    ],
)
def test_a_file_and_a_folder_colliding_by_case(
    make_library: MakeLibrary, layout: dict[str, str]
) -> None:
    config = make_library(
        {k: doc(f"d{i}") if v == "doc" else v for i, (k, v) in enumerate(layout.items())}
    )
    code, lines = check_lines(config)
    assert code == 1 and any("HB105" in line for line in lines), lines


def test_collisions_of_resources_and_docs(make_library: MakeLibrary) -> None:
    """Resources collide with each other and with docs, by case and by normalization."""
    nfc, nfd = unicodedata.normalize("NFC", "é.txt"), unicodedata.normalize("NFD", "é.txt")
    config = make_library(
        {
            "skill/SKILL.md": SKILL_DOC,
            "skill/Data.csv": "a",
            "skill/data.CSV": "b",
            f"skill/{nfc}": "c",
            f"skill/{nfd}": "d",
            "skill/skill.md": "e",
        }
    )
    code, lines = check_lines(config)
    assert code == 1
    hb105 = sorted(line.split(":")[0] for line in lines if " HB105 " in line)
    assert hb105 == sorted(
        ["skill/data.CSV", f"skill/{nfd}" if nfd > nfc else f"skill/{nfc}", "skill/skill.md"]
    ), lines


@pytest.fixture
def docs_root(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text(doc("a"))
    (root / "sub").mkdir()
    (root / "sub" / "b.md").write_text(doc("b"))
    return root


def test_more_symlinks_are_refused_and_never_followed(docs_root: Path, tmp_path: Path) -> None:
    """A symlink to a folder inside the root, a two-link loop, a dangling link, a link to
    a FIFO (following it would hang), and a relative link out through `..`."""
    (docs_root / "sub-link").symlink_to(docs_root / "sub", target_is_directory=True)
    (docs_root / "ping.md").symlink_to("pong.md")
    (docs_root / "pong.md").symlink_to("ping.md")
    (docs_root / "dangling.md").symlink_to(docs_root / "nowhere.md")
    os.mkfifo(tmp_path / "fifo")
    (docs_root / "to-fifo.md").symlink_to(tmp_path / "fifo")
    (docs_root / "up.md").symlink_to("../../../../../../../../etc/passwd")
    assert findings(docs_root) == [
        "dangling.md:1:1: HB102 is a symlink; replace it with the file itself",
        "ping.md:1:1: HB102 is a symlink; replace it with the file itself",
        "pong.md:1:1: HB102 is a symlink; replace it with the file itself",
        "sub-link:1:1: HB102 is a symlink; replace it with the file itself",
        "to-fifo.md:1:1: HB104 is a symlink that escapes the docs root; move the file into the docs root",
        "up.md:1:1: HB104 is a symlink that escapes the docs root; move the file into the docs root",
    ]
    assert discover(docs_root).paths == ["a.md", "sub/b.md"]  # nothing reached through sub-link


def test_a_symlinked_docs_root_is_walked_as_itself(docs_root: Path, tmp_path: Path) -> None:
    """The root itself may be a link (a checkout elsewhere); links inside are still judged
    against its real location."""
    link = tmp_path / "docs-link"
    link.symlink_to(docs_root, target_is_directory=True)
    (docs_root / "inner.md").symlink_to(docs_root / "a.md")
    assert discover(link).paths == ["a.md", "sub/b.md"]
    assert findings(link) == ["inner.md:1:1: HB102 is a symlink; replace it with the file itself"]


def test_a_socket_is_a_special_file(docs_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(docs_root)  # AF_UNIX paths are short: bind a relative name
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock.md")
        assert findings(docs_root) == [
            "sock.md:1:1: HB103 is a special file (FIFO, socket or device); remove it from the docs root"
        ]
        assert not isinstance(read(docs_root, "sock.md"), Text)


def test_read_refuses_a_symlink_swapped_in_after_discovery(docs_root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text(doc("secret"))
    (docs_root / "a.md").unlink()
    (docs_root / "a.md").symlink_to(tmp_path / "secret.md")
    found = read(docs_root, "a.md")
    assert not isinstance(found, Text) and found.code == "HB102"


def test_a_hardlink_is_a_regular_file_and_is_copied(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    """Documented behaviour: a hardlink cannot be told from the file it shares an inode
    with (there is no "link" to see, only a link count), so `discover` accepts it, even
    when the other name is outside the docs root. What it holds at build time is copied
    into the bundle: the bundle's file is a new inode, and changing the outside name
    afterwards changes nothing that was built."""
    config = make_library({"skill/SKILL.md": SKILL_DOC})
    outside = tmp_path / "outside.csv"
    outside.write_text("a,b\n1,2\n")
    os.link(outside, config.parent / "docs" / "skill" / "data.csv")
    os.link(
        config.parent / "docs" / "skill" / "SKILL.md", config.parent / "docs" / "skill" / "copy.txt"
    )
    assert os.stat(outside).st_nlink == 2
    assert check_lines(config) == (0, [])
    out = tmp_path / "out"
    build(load_config(config), out, KEY)
    lib = Library.open(out, [PUBLIC])
    answer = lib.resource("skill.x", "data.csv")
    assert answer["found"] is True and answer["content"] == "a,b\n1,2\n"
    stored = Path(os.path.realpath(out)) / "resources" / answer["sha256"]
    assert stored.stat().st_nlink == 1 and stored.stat().st_ino != outside.stat().st_ino
    outside.write_text("changed\n")
    assert run_cli("verify", str(out), "--key", PUBLIC).exit_code == 0
    assert Library.open(out, [PUBLIC]).resource("skill.x", "data.csv")["content"] == "a,b\n1,2\n"


# == at load: manifests ==========================================================================


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paths") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(TRUSTED_KEYS_ENV, raising=False)
        build(load_config(EXAMPLE), out, KEY)
    return Path(os.path.realpath(out))


@pytest.fixture
def bundle(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    return copy


def resign(folder: Path, change: Callable[[dict[str, FileEntry]], None]) -> bytes:
    """Change the listed files and sign the manifest again with the trusted key."""
    manifest = Manifest.from_bytes((folder / MANIFEST).read_bytes())
    files = dict(manifest.signed.files)
    change(files)
    signed = manifest.signed._replace(files=files)
    data = Manifest(signed, (sign(KEY, MANIFEST_TAG, signed.to_dict()),)).to_bytes()
    (folder / MANIFEST).write_bytes(data)
    return data


UNSAFE = [
    "../x",
    "/abs",
    "/etc/passwd",
    "C:\\x",
    "c:/x",
    "a\\b",
    "\\\\server\\share",
    "a//b",
    "a/./b",
    "./a",
    "a/",
    "x\x00y",
    "trailing.",
    "trailing ",
    "dir./x",
    "dir /x",
    "content/../../x",
    "content/..",
    "CON",
    "sub/nul.txt",
    "aux.json",
    "a:b",
    "manifest.json",
]


@pytest.mark.parametrize("path", UNSAFE, ids=ascii)
def test_a_signed_manifest_listing_an_unsafe_path_is_refused(bundle: Path, path: str) -> None:
    """The signature is good (a trusted key signed it): the path check alone refuses it,
    before any listed file is looked at."""
    data = resign(bundle, lambda files: files.__setitem__(path, FileEntry("0" * 64, 1)))
    assert path == MANIFEST or check_path(path) is not None
    with pytest.raises(FormatError) as parsed:
        Manifest.from_bytes(data)
    assert repr(path) in str(parsed.value)
    with pytest.raises(FormatError) as opened:
        open_bundle(bundle, [PUBLIC])
    assert str(opened.value) == str(parsed.value)
    with pytest.raises(FormatError):
        Library.open(bundle, [PUBLIC])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["LLMS.txt"], "'LLMS.txt' and 'llms.txt' differ only by case", id="case-fold"),
        pytest.param(["Catalog.JSON"], "differ only by case", id="case-fold-2"),
        pytest.param([unicodedata.normalize("NFD", "é.txt")], "is not ASCII", id="NFD"),
        pytest.param(
            [unicodedata.normalize("NFC", "é.txt"), unicodedata.normalize("NFD", "é.txt")],
            "is not ASCII",
            id="NFC-vs-NFD",
        ),
        pytest.param(["\u212a.txt", "k.txt"], "is not ASCII", id="kelvin-sign-folds-to-k"),
    ],
)
def test_a_signed_manifest_with_colliding_paths_is_refused(
    bundle: Path, extra: list[str], message: str
) -> None:
    """Two names for one file on a case-insensitive or normalizing filesystem. Non-ASCII
    paths never get as far as the collision check: the signed profile allows ASCII keys only."""
    data = resign(bundle, lambda files: files.update({p: FileEntry("0" * 64, 1) for p in extra}))
    with pytest.raises(FormatError, match=message):
        Manifest.from_bytes(data)
    with pytest.raises(FormatError, match=message):
        open_bundle(bundle, [PUBLIC])


def test_check_path_on_normalization() -> None:
    """What the ASCII profile pre-empts, check_path refuses on its own."""
    assert check_path(unicodedata.normalize("NFD", "é.txt")) == "is not NFC-normalized"
    assert check_path("\u212b.txt") == "is not NFC-normalized"  # ANGSTROM SIGN
    assert check_path(unicodedata.normalize("NFC", "é.txt")) is None


def test_a_path_listed_as_file_and_folder_is_refused_locally(bundle: Path) -> None:
    """`llms.txt` and `llms.txt/x` cannot both exist anywhere: the manifest is refused
    before anything on disk is looked at."""
    resign(bundle, lambda files: files.__setitem__("llms.txt/x", FileEntry("0" * 64, 1)))
    with pytest.raises(FormatError, match=r"'llms\.txt' is listed as a file and is also a folder"):
        open_bundle(bundle, [PUBLIC])


# == at load: what is in the bundle folder ========================================================


def _llms(bundle: Path) -> Path:
    return bundle / "llms.txt"


def _replace_with_symlink_inside(bundle: Path, tmp_path: Path) -> str:
    _llms(bundle).unlink()
    _llms(bundle).symlink_to("catalog.json")
    return "llms.txt"


def _replace_with_symlink_to_folder(bundle: Path, tmp_path: Path) -> str:
    _llms(bundle).unlink()
    _llms(bundle).symlink_to("content", target_is_directory=True)
    return "llms.txt"


def _replace_with_loop(bundle: Path, tmp_path: Path) -> str:
    _llms(bundle).unlink()
    _llms(bundle).symlink_to("llms.txt")
    return "llms.txt"


def _replace_with_dangling(bundle: Path, tmp_path: Path) -> str:
    _llms(bundle).unlink()
    _llms(bundle).symlink_to(tmp_path / "nowhere")
    return "llms.txt"


def _replace_with_socket(bundle: Path, tmp_path: Path) -> str:
    _llms(bundle).unlink()
    cwd = os.getcwd()
    os.chdir(bundle)  # AF_UNIX paths are short: bind a relative name
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("llms.txt")  # the socket file stays after the close
    finally:
        os.chdir(cwd)
    return "llms.txt"


def _replace_folder_with_loop(bundle: Path, tmp_path: Path) -> str:
    shutil.rmtree(bundle / "content")
    (bundle / "content").symlink_to("content", target_is_directory=True)
    return "content"


IN_PLACE: dict[str, Callable[[Path, Path], str]] = {
    # test_tamper.py has symlinks to outside copies, symlinked folders, FIFOs and a
    # hardlink to another listed file; these are the other shapes
    "symlink to a listed file": _replace_with_symlink_inside,
    "symlink to a folder": _replace_with_symlink_to_folder,
    "symlink loop": _replace_with_loop,
    "dangling symlink": _replace_with_dangling,
    "socket": _replace_with_socket,
    "folder symlink loop": _replace_folder_with_loop,
}


@pytest.mark.parametrize("case", sorted(IN_PLACE))
@pytest.mark.parametrize("hash_all", [True, False], ids=["verify", "fast-open"])
def test_links_and_special_files_in_place_of_listed_ones(
    bundle: Path, tmp_path: Path, case: str, hash_all: bool
) -> None:
    """Refused, with a message that names the file, both by `handbook verify`'s full open
    and by the runtime's fast open (which hashes lazily but still walks the tree)."""
    name = IN_PLACE[case](bundle, tmp_path)
    with pytest.raises(BundleError) as info:
        open_bundle(bundle, [PUBLIC], hash_all=hash_all)
    assert str(info.value).startswith(f"{name}: "), str(info.value)
    assert isinstance(info.value, FormatError | UnlistedFileError | MissingFileError)


def test_a_hardlink_in_a_bundle_is_a_regular_file(bundle: Path, tmp_path: Path) -> None:
    """Documented behaviour: a hardlinked file is accepted when its bytes are the listed
    ones (there is nothing else to check: it is the file). Bytes changed through the other
    name are caught like any tampering: at open when hashing, at first read otherwise,
    and bytes already verified and kept in memory are never re-read."""
    elsewhere = tmp_path / "llms-elsewhere.txt"
    os.link(_llms(bundle), elsewhere)
    catalog_elsewhere = tmp_path / "catalog-elsewhere.json"
    os.link(bundle / "catalog.json", catalog_elsewhere)
    assert open_bundle(bundle, [PUBLIC]).read("llms.txt") == elsewhere.read_bytes()
    fast = open_bundle(bundle, [PUBLIC], hash_all=False)
    fast.read("catalog.json")  # verified and kept
    original = elsewhere.read_bytes()
    elsewhere.write_bytes(original.replace(b"a", b"b", 1))  # same size, other bytes
    catalog = catalog_elsewhere.read_bytes()
    catalog_elsewhere.write_bytes(catalog.replace(b"a", b"b", 1))
    with pytest.raises(HashMismatchError, match=r"^llms\.txt: observed sha256"):
        fast.read("llms.txt")
    assert (
        hashlib.sha256(fast.read("catalog.json")).hexdigest()
        == fast.manifest.signed.files["catalog.json"].sha256
    )
    with pytest.raises(HashMismatchError, match=r"^(llms\.txt|catalog\.json): "):
        open_bundle(bundle, [PUBLIC])


# == after the bundle was opened ==================================================================


@pytest.mark.parametrize("swap", ["symlink", "fifo", "folder-symlink"])
def test_files_swapped_after_opening_are_never_followed(
    bundle: Path, tmp_path: Path, swap: str
) -> None:
    """The runtime opens fast and reads content on demand: a content file swapped for a
    link or a FIFO after the open is refused when read (never followed, never blocking),
    and a content folder swapped for a link keeps being read through the descriptor of
    the folder that was verified."""
    lib = Library.open(bundle, [PUBLIC])
    doc = lib.bundle.catalog.docs[0]
    victim = bundle / doc.content
    original = victim.read_bytes()
    (tmp_path / "evil.md").write_bytes(b"# evil\n" + b"x" * (len(original) - 7))
    if swap == "symlink":
        victim.unlink()
        victim.symlink_to(tmp_path / "evil.md")
    elif swap == "fifo":
        victim.unlink()
        os.mkfifo(victim)
    else:
        os.rename(bundle / "content", tmp_path / "moved")
        evil = tmp_path / "evil-content"
        evil.mkdir()
        (evil / victim.name).write_bytes((tmp_path / "evil.md").read_bytes())
        (bundle / "content").symlink_to(evil, target_is_directory=True)
    answer = lib.get(doc.id)
    assert "evil" not in str(answer.get("content", ""))
    if swap == "folder-symlink":
        assert answer["found"] is True and answer["content"].startswith(original.decode()[:20])
    else:
        assert "content" not in answer and answer["error"]["code"] == "integrity_error"
        assert doc.content in answer["error"]["message"]
        with pytest.raises(FormatError, match=f"^{doc.content}: "):
            lib.bundle.read(doc.content)


# == at load over HTTP ===========================================================================


class FilesHandler(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        data = self.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def served(bundle: Path) -> Iterator[tuple[str, type[FilesHandler]]]:
    handler = type("Handler", (FilesHandler,), {"files": {}, "seen": []})
    with loopback_server(handler) as url:
        yield url, handler


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize(
    "path",
    ["../escaped", "content/../../escaped", "/tmp/escaped", "a\\..\\..\\escaped", "a//b"],
    ids=ascii,
)
def test_fetch_refuses_unsafe_paths_before_downloading_them(
    bundle: Path, tmp_path: Path, served: Any, path: str
) -> None:
    url, handler = served
    resign(
        bundle,
        lambda files: files.__setitem__(path, FileEntry(hashlib.sha256(b"x").hexdigest(), 1)),
    )
    handler.files.update(files_of(bundle))
    handler.files[path] = b"x"
    with pytest.raises(FormatError, match="file path"):
        Library.open(url, [PUBLIC], cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")
    assert handler.seen == ["/manifest.json"]
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "cache" / "escaped").exists()


def test_fetch_of_a_path_listed_as_file_and_folder_is_a_bundle_error(
    bundle: Path, tmp_path: Path, served: Any
) -> None:
    url, handler = served
    resign(
        bundle,
        lambda files: files.__setitem__(
            "llms.txt/x", FileEntry(hashlib.sha256(b"x").hexdigest(), 1)
        ),
    )
    handler.files.update(files_of(bundle))
    handler.files["llms.txt/x"] = b"x"
    with pytest.raises(BundleError, match=r"llms\.txt"):
        Library.open(url, [PUBLIC], cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")


# == archives: names that no filesystem holds twice ===============================================


def _archive(path: Path, bundle: Path, extra: str) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in sorted(files_of(bundle).items(), key=lambda item: item[0] != MANIFEST):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(extra)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("a\\b", "holds a backslash"),
        ("trailing.", "ending in a dot or space"),
        ("trailing ", "ending in a dot or space"),
        ("a//b", "'.' or '..' segment"),
        ("a/./b", "'.' or '..' segment"),
        (unicodedata.normalize("NFD", "é.txt"), "is not NFC-normalized"),
        ("LLMS.TXT", "appears twice"),
        ("x\x01y", "control character"),
    ],
    ids=ascii,
)
def test_archives_refuse_names_a_bundle_cannot_hold(
    bundle: Path, tmp_path: Path, extra: str, message: str
) -> None:
    archive = _archive(tmp_path / "b.tar.gz", bundle, extra)
    with pytest.raises(FormatError, match=message):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "catalog.json").exists()  # checked before a byte is written


def test_a_listed_file_in_a_missing_folder_is_a_missing_file(bundle: Path) -> None:
    """Found by bench/fuzz.py: a manifest naming a file in a folder that is not there was a
    bare FileNotFoundError from the folder walk."""
    resign(bundle, lambda files: files.__setitem__("extra/deeper/x.md", FileEntry("0" * 64, 1)))
    with pytest.raises(MissingFileError, match=r"extra"):
        open_bundle(bundle, [PUBLIC])
    with pytest.raises(MissingFileError, match=r"extra"):
        open_bundle(bundle, [PUBLIC], hash_all=False)
