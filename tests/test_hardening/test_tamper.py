"""The tamper matrix: every file of a signed bundle, changed in every small way an
attacker or a failing disk could change it, makes the bundle refused.

For each file (the manifest, catalog.json, catalog-offsets.bin, ids.bin, index.json.gz,
search.bin, tools.json, llms.txt, chunks.bin (the example is built with chunk hashes of
every file above 1 KiB, so that the large files are read by chunks), every content file
and every attached resource) and
each change (a flipped bit at the
first, middle and last byte, a flipped high bit in the middle, one byte cut off, one
byte appended, the file deleted, the file replaced by the one at the same path in
another version of the library), the bundle is refused:

- `open_bundle(..., hash_all=True)` (as `handbook verify` opens) raises a `BundleError`
  whose message names the file (for the manifest: manifest.json or the signature);
- `Library.open` (lazy hashing) either refuses at open, naming the file, or refuses the
  file when it is first read, and its handlers answer structured errors, never the
  tampered bytes.

Then unlisted files and folders, symlinks, a FIFO and a folder standing in for a file;
and last a live server: a tampered new version published at the bundle path is refused
on reload, and the old version keeps answering.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT, get_json, live, request

from handbook import BundleError, Library
from handbook.bundle.layout import CATALOG_OFFSETS, CHUNKS, IDS, is_content
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import MANIFEST
from handbook.bundle.signing import SIGNING_KEY_ENV, TRUSTED_KEYS_ENV
from handbook.libraries.reloader import Reloader
from handbook.serve.http import create_app
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.write import seal

EXAMPLE = ROOT / "examples" / "skills"
EPOCH = "1767225600"
CHANGED_DOC = "device.acme.ac300"
CHANGED_RESOURCE = "registers.csv"
NEW_WORDS = "A second edition adds this line."

TALLY: dict[str, int] = {
    "tried": 0,
    "accepted": 0,
    "strict_tried": 0,
    "lazy_tried": 0,
    "refused_at_open": 0,
    "refused_on_read": 0,
}
ACCEPTED: list[str] = []


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No keys leaking in from the environment: only PUBLIC is trusted."""
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)
    monkeypatch.delenv(SIGNING_KEY_ENV, raising=False)


def _build(config: Any, out: Path) -> Path:
    """Build outside a test's monkeypatch (module fixtures); the real version folder."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.delenv("CI", raising=False)
        mp.delenv(SIGNING_KEY_ENV, raising=False)
        mp.delenv(TRUSTED_KEYS_ENV, raising=False)
        mp.setattr(seal, "CHUNK_BYTES", 1024)  # chunks.bin, of the files above 1 KiB
        mp.setattr(seal, "CHUNKED_ABOVE", 1024)
        build(config, out, KEY)
    return Path(os.path.realpath(out))


def _files(root: Path) -> list[str]:
    """Every file of a bundle folder, as bundle paths, the manifest first."""
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return [MANIFEST, *(name for name in found if name != MANIFEST)]


@dataclasses.dataclass(frozen=True)
class Versions:
    old: Path
    """The real folder of plant-skills 1.0.0 (never modified)."""
    new: Path
    """The real folder of plant-skills 1.0.1: one doc, one attached file and one keyword changed."""
    old_link: Path
    new_link: Path
    files: tuple[str, ...]
    """Every file of `old`, the manifest first."""
    replacement: dict[str, bytes]
    """For each file of `old`, different bytes from `new`: the same path when `new` has
    it with other bytes, else (content and resources are named by their hash) the file
    of the same folder that only `new` has."""
    owner: dict[str, tuple[str, str | None]]
    """content or resource file -> (doc id, resource path or None)."""


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> Versions:
    base = tmp_path_factory.mktemp("tamper")
    old_link = base / "old" / "bundle"
    old = _build(load_config(EXAMPLE / "mkdocs.yml"), old_link)

    source = base / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build"))
    doc = source / "docs" / "devices" / "ac300" / "index.md"
    text = doc.read_text(encoding="utf-8")
    edited = text.replace(
        "keywords: [ac300, ac-300, compressor, acme]",
        "keywords: [ac300, ac-300, compressor, acme, oil]",
    )
    assert edited != text, "the example doc changed; update the edit"
    doc.write_text(edited + f"\n{NEW_WORDS}\n", encoding="utf-8")
    config = source / "mkdocs.yml"  # a kind of its own, so tools.json's kind enum differs
    vocab = config.read_text(encoding="utf-8")
    assert "kind: [skill, device, guide]" in vocab, "the example's vocab changed; update the edit"
    config.write_text(vocab.replace("[skill, device, guide]", "[skill, device, guide, note]"))
    table = source / "docs" / "devices" / "ac300" / CHANGED_RESOURCE
    table.write_text(
        table.read_text(encoding="utf-8") + "3,oil_level,uint16,%,1\n", encoding="utf-8"
    )
    new_link = base / "new" / "bundle"
    new = _build(dataclasses.replace(load_config(source / "mkdocs.yml"), version="1.0.1"), new_link)

    files = _files(old)
    new_files = set(_files(new))
    replacement: dict[str, bytes] = {}
    for name in files:
        mine = (old / name).read_bytes()
        if name in new_files and (new / name).read_bytes() != mine:
            replacement[name] = (new / name).read_bytes()
        elif "/" in name:
            folder = name.split("/")[0] + "/"
            only_new = sorted(n for n in new_files - set(files) if n.startswith(folder))
            assert only_new, f"1.0.1 has no new file in {folder}"
            replacement[name] = (new / only_new[0]).read_bytes()
        else:
            pytest.fail(f"{name} is the same in both versions; change the second version more")
        assert replacement[name] != mine

    catalog = open_bundle(old, [PUBLIC]).catalog
    owner: dict[str, tuple[str, str | None]] = {}
    for entry in catalog.docs:
        owner.setdefault(entry.content, (entry.id, None))
        for resource in entry.resources:
            owner.setdefault(resource.file, (entry.id, resource.path))
    assert any(name.startswith("resources/") for name in files), (
        "the example lost its attached files"
    )
    return Versions(old, new, old_link, new_link, tuple(files), replacement, owner)


def _copy(versions: Versions, tmp_path: Path, label: str, source: Path | None = None) -> Path:
    target = tmp_path / label.replace("/", "_")
    shutil.copytree(source or versions.old, target, symlinks=True)
    return target


# -- the matrix ---------------------------------------------------------------------------------

Mutation = Callable[[Path, str, Versions], None]


def _flip(position: Callable[[int], int], mask: int) -> Mutation:
    def mutate(path: Path, name: str, versions: Versions) -> None:
        data = bytearray(path.read_bytes())
        data[position(len(data))] ^= mask
        path.write_bytes(bytes(data))

    return mutate


def _truncate(path: Path, name: str, versions: Versions) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def _append(path: Path, name: str, versions: Versions) -> None:
    path.write_bytes(path.read_bytes() + b"\n")


def _delete(path: Path, name: str, versions: Versions) -> None:
    path.unlink()


def _other_version(path: Path, name: str, versions: Versions) -> None:
    path.write_bytes(versions.replacement[name])


MUTATIONS: dict[str, Mutation] = {
    "flip-first": _flip(lambda n: 0, 0x01),
    "flip-middle": _flip(lambda n: n // 2, 0x01),
    "flip-middle-high-bit": _flip(lambda n: n // 2, 0x80),
    "flip-last": _flip(lambda n: n - 1, 0x01),
    "truncate-1": _truncate,
    "append-1": _append,
    "delete": _delete,
    "other-version": _other_version,
}


def _names_it(message: str, name: str, mutation: str, versions: Versions) -> bool:
    """Whether a refusal's message points at the changed file."""
    if name != MANIFEST:
        return name in message
    if MANIFEST in message or "signature" in message:
        return True
    # A validly signed manifest of the other version: refused because the files do not
    # match it, and the message names the first file that does not.
    return mutation == "other-version" and any(
        f in message for f in (*versions.files, *_files(versions.new))
    )


def _handler_answers(
    lib: Library, name: str, versions: Versions
) -> list[tuple[str, dict[str, Any]]]:
    """The agent-facing answers that need the tampered file."""
    if name in versions.owner:
        doc_id, resource = versions.owner[name]
        if resource is None:  # every call that reads a doc's content: get, collect (a
            # search shows excerpts kept in the verified search.bin and reads no content)
            return [
                (f"get({doc_id})", lib.get(doc_id)),
                (f"collect(ids=[{doc_id}])", lib.collect(ids=[doc_id])),
            ]
        return [(f"resource({doc_id}, {resource})", lib.resource(doc_id, resource))]
    if name == IDS:  # read for an unknown id's suggestions alone
        return [("get(an unknown id)", lib.get(CHANGED_DOC + "0"))]
    if name == "catalog.json":
        got = lib.get(CHANGED_DOC)
        if got.get("found") is True:  # the chunks its entry lies in are intact (chunks.bin)
            assert got == Library.open(versions.old, [PUBLIC]).get(CHANGED_DOC)
            return [("list()", lib.list())]
        return [("list()", lib.list()), (f"get({CHANGED_DOC})", got)]
    return []


def _check_strict(
    copy: Path, name: str, mutation: str, versions: Versions, problems: list[str]
) -> bool:
    """True when accepted."""
    TALLY["strict_tried"] += 1
    label = f"{name} / {mutation} / open_bundle(hash_all=True)"
    try:
        open_bundle(copy, [PUBLIC], hash_all=True)
    except BundleError as exc:
        if not _names_it(str(exc), name, mutation, versions):
            problems.append(f"{label}: refused, but the message does not name the file: {exc}")
        return False
    except Exception as exc:  # refused, but not the documented way
        problems.append(f"{label}: raised {type(exc).__name__} (not a BundleError): {exc}")
        return False
    problems.append(f"{label}: ACCEPTED")
    return True


def _check_lazy(
    copy: Path, name: str, mutation: str, versions: Versions, problems: list[str]
) -> bool:
    """True when accepted: opened, and the tampered file read without complaint."""
    TALLY["lazy_tried"] += 1
    label = f"{name} / {mutation} / Library.open"
    try:
        lib = Library.open(copy, [PUBLIC])
    except BundleError as exc:
        TALLY["refused_at_open"] += 1
        if not _names_it(str(exc), name, mutation, versions):
            problems.append(
                f"{label}: refused at open, but the message does not name the file: {exc}"
            )
        return False
    except Exception as exc:
        problems.append(f"{label}: raised {type(exc).__name__} (not a BundleError): {exc}")
        return False
    if name == MANIFEST:  # a manifest that got past open: some listed file must then fail
        refused = []
        for listed in lib.bundle.manifest.signed.files:
            try:
                lib.bundle.read(listed)
            except BundleError:
                refused.append(listed)
        if refused:
            TALLY["refused_on_read"] += 1
            return False
        problems.append(f"{label}: ACCEPTED (opened, and every listed file reads)")
        return True
    for attempt in ("first read", "second read"):  # a refused file is not cached either
        try:
            data = lib.bundle.read(name)
        except BundleError as exc:
            if not _names_it(str(exc), name, mutation, versions):
                problems.append(
                    f"{label}: {attempt} refused, but the message does not name the file: {exc}"
                )
        except Exception as exc:
            problems.append(
                f"{label}: {attempt} raised {type(exc).__name__} (not a BundleError): {exc}"
            )
        else:
            problems.append(f"{label}: ACCEPTED ({attempt} handed out {len(data)} bytes)")
            return True
    TALLY["refused_on_read"] += 1
    tampered = (copy / name).read_bytes() if (copy / name).exists() else b""
    for call, answer in _handler_answers(lib, name, versions):
        if answer.get("found") is True or "error" not in answer:
            problems.append(f"{label}: {call} answered without an error: {str(answer)[:300]}")
        if "content" in answer or "content_base64" in answer:
            problems.append(f"{label}: {call} handed out content: {str(answer)[:300]}")
        text = tampered.decode("utf-8", "replace").strip()
        if len(text) > 40 and text in json.dumps(answer, ensure_ascii=False):
            problems.append(f"{label}: {call} echoes the tampered bytes")
    return False


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_every_file_tampered_is_refused(versions: Versions, tmp_path: Path, mutation: str) -> None:
    problems: list[str] = []
    for name in versions.files:
        copy = _copy(versions, tmp_path, name)
        MUTATIONS[mutation](copy / name, name, versions)
        assert (copy / name).exists() is (mutation != "delete")
        TALLY["tried"] += 1
        accepted = _check_strict(copy, name, mutation, versions, problems)
        accepted = _check_lazy(copy, name, mutation, versions, problems) or accepted
        if accepted:
            TALLY["accepted"] += 1
            ACCEPTED.append(f"{name} / {mutation}")
        shutil.rmtree(copy)
    assert not problems, "\n".join(problems)


def test_the_matrix_covers_every_kind_of_file(versions: Versions) -> None:
    names = set(versions.files)
    assert {
        MANIFEST,
        "catalog.json",
        CATALOG_OFFSETS,
        IDS,
        "index.json.gz",
        "search.bin",
        "tools.json",
        "llms.txt",
        CHUNKS,
    } <= names
    assert sum(n.startswith("content/") for n in names) >= 3
    assert sum(n.startswith("resources/") for n in names) >= 2
    assert len(names) == len(versions.files)


def test_untampered_copy_is_accepted(versions: Versions, tmp_path: Path) -> None:
    """The control: the copying itself does not make bundles fail."""
    copy = _copy(versions, tmp_path, "good")
    open_bundle(copy, [PUBLIC], hash_all=True)
    lib = Library.open(copy, [PUBLIC])
    for name in versions.files:
        assert lib.bundle.read(name) == (versions.old / name).read_bytes()
    doc_id, resource = next(v for v in versions.owner.values() if v[1] is not None)
    assert lib.resource(doc_id, resource)["found"] is True
    assert lib.get(CHANGED_DOC)["found"] is True
    open_bundle(versions.new, [PUBLIC], hash_all=True)


# -- unlisted files, folders, links and special files ----------------------------------------


def _first(versions: Versions, folder: str) -> str:
    return next(n for n in versions.files if n.startswith(folder))


def _symlink_to_copy(copy: Path, name: str, outside: Path) -> None:
    """Replace `name` by a symlink to a file outside holding exactly the same bytes."""
    twin = outside / (name.replace("/", "_") + ".twin")
    twin.write_bytes((copy / name).read_bytes())
    (copy / name).unlink()
    (copy / name).symlink_to(twin)


def _extra_file(name: str) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        (copy / name).write_bytes(b"# not listed\n")
        return name

    return make


def _extra_folder(name: str, with_file: bool) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        (copy / name).mkdir()
        if with_file:
            (copy / name / "x.md").write_bytes(b"hidden\n")
        return name

    return make


def _symlink(kind: str) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        name = kind if "/" not in kind else _first(versions, kind)
        _symlink_to_copy(copy, name, outside)
        return name

    return make


def _symlinked_folder(folder: str) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        twin = outside / (folder + "-twin")
        shutil.copytree(copy / folder, twin)
        shutil.rmtree(copy / folder)
        (copy / folder).symlink_to(twin, target_is_directory=True)
        return folder

    return make


def _fifo(folder: str) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        name = folder if "/" not in folder else _first(versions, folder)
        (copy / name).unlink()
        os.mkfifo(copy / name)
        return name

    return make


def _folder_for_file(name: str) -> Callable[[Path, Path, Versions], str]:
    def make(copy: Path, outside: Path, versions: Versions) -> str:
        (copy / name).unlink()
        (copy / name).mkdir()
        return name

    return make


def _hardlink_swap(copy: Path, outside: Path, versions: Versions) -> str:
    """llms.txt replaced by a hard link to index.json.gz: a regular file, wrong bytes."""
    (copy / "llms.txt").unlink()
    os.link(copy / "index.json.gz", copy / "llms.txt")
    return "llms.txt"


EXTRAS: dict[str, Callable[[Path, Path, Versions], str]] = {
    "unlisted-file-at-root": _extra_file("notes.md"),
    "unlisted-dotfile-at-root": _extra_file(".DS_Store"),
    "unlisted-manifest-twin": _extra_file("manifest.json.sig"),
    "unlisted-file-in-content": _extra_file("content/" + "0" * 64 + ".md"),
    "unlisted-file-in-resources": _extra_file("resources/" + "0" * 64),
    "unlisted-empty-folder": _extra_folder("extra", with_file=False),
    "unlisted-folder-with-file": _extra_folder("extra", with_file=True),
    "unlisted-folder-in-content": _extra_folder("content/sub", with_file=True),
    "symlink-manifest": _symlink(MANIFEST),
    "symlink-catalog": _symlink("catalog.json"),
    "symlink-search": _symlink("search.bin"),
    "symlink-content": _symlink("content/"),
    "symlink-resource": _symlink("resources/"),
    "symlinked-content-folder": _symlinked_folder("content"),
    "symlinked-resources-folder": _symlinked_folder("resources"),
    "fifo-for-content": _fifo("content/"),
    "fifo-for-manifest": _fifo(MANIFEST),
    "folder-for-catalog": _folder_for_file("catalog.json"),
    "hardlink-other-file": _hardlink_swap,
}


IN_CONTENT_FOLDERS = {
    "unlisted-file-in-content": "content/" + "0" * 64 + ".md",
    "unlisted-file-in-resources": "resources/" + "0" * 64,
    "unlisted-folder-in-content": "content/sub/x.md",
    "symlink-content": "",
    "symlink-resource": "",
    "fifo-for-content": "",
}
"""Damage inside content/ and resources/, which a lazy open does not list (handbook/v2:
opening costs the same at any number of docs) -> the file a read would meet ("": the
damaged one). `handbook verify` refuses each; a lazy reader refuses each read of it."""


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_unlisted_links_and_special_files_are_refused(
    versions: Versions, tmp_path: Path, extra: str
) -> None:
    copy = _copy(versions, tmp_path, "copy")
    outside = tmp_path / "outside"
    outside.mkdir()
    name = EXTRAS[extra](copy, outside, versions)
    TALLY["tried"] += 1
    accepted = False
    problems: list[str] = []
    for mode, opener in (
        ("open_bundle(hash_all=True)", lambda: open_bundle(copy, [PUBLIC], hash_all=True)),
        ("open_bundle(hash_all=False)", lambda: open_bundle(copy, [PUBLIC], hash_all=False)),
        ("Library.open", lambda: Library.open(copy, [PUBLIC]).bundle),
    ):
        try:
            opened = opener()
        except BundleError as exc:
            if name not in str(exc):
                problems.append(f"{mode}: refused, but the message does not name {name}: {exc}")
        except Exception as exc:
            problems.append(f"{mode}: raised {type(exc).__name__} (not a BundleError): {exc}")
        else:
            # the hard-linked file is a regular file of the wrong size: a lazy open finds
            # it on first read, which the matrix covers; everything else is structural
            if extra == "hardlink-other-file" and mode != "open_bundle(hash_all=True)":
                continue
            if extra in IN_CONTENT_FOLDERS and mode != "open_bundle(hash_all=True)":
                problems += _read_refused(opened, IN_CONTENT_FOLDERS[extra] or name, mode)
                continue
            accepted = True
            problems.append(f"{mode}: ACCEPTED")
    if accepted:
        TALLY["accepted"] += 1
        ACCEPTED.append(extra)
    assert not problems, "\n".join(problems)


def _read_refused(bundle: Any, name: str, mode: str) -> list[str]:
    """Problems with reading `name` from a lazily opened bundle: none when refused."""
    for attempt in ("first read", "second read"):
        try:
            data = bundle.read(name)
        except BundleError as exc:
            if name not in str(exc):
                return [f"{mode}: {attempt} of {name} refused without naming it: {exc}"]
        else:
            return [f"{mode}: {attempt} of {name} handed out {len(data)} bytes"]
    return []


def test_hardlinked_file_is_refused_on_first_read(versions: Versions, tmp_path: Path) -> None:
    copy = _copy(versions, tmp_path, "copy")
    _hardlink_swap(copy, tmp_path, versions)
    lib = Library.open(copy, [PUBLIC])
    with pytest.raises(BundleError, match=r"llms\.txt"):
        lib.bundle.read("llms.txt")


# -- tampered after a lazy open ------------------------------------------------------------------


def test_files_tampered_after_a_lazy_open_are_never_handed_out(
    versions: Versions, tmp_path: Path
) -> None:
    """A lazily opened library whose files change on disk afterwards (in place, or
    replaced by a new file): each read hands out the verified bytes it already holds or
    refuses; never the new bytes."""
    problems: list[str] = []
    for how in ("in-place", "replaced"):
        copy = _copy(versions, tmp_path, f"after-open-{how}")
        lib = Library.open(copy, [PUBLIC])
        for name in versions.files:
            tampered = versions.replacement[name]
            if how == "in-place":
                (copy / name).write_bytes(tampered)
            else:
                (copy / f".{os.path.basename(name)}.new").write_bytes(tampered)
                os.replace(copy / f".{os.path.basename(name)}.new", copy / name)
        for name in versions.files:
            TALLY["tried"] += 1
            try:
                data = lib.bundle.read(name)
            except BundleError as exc:
                # A content file is reached through the catalog entry that vouches for it:
                # with catalog.json changed too and not yet read, that is what is refused.
                if name not in str(exc) and not (is_content(name) and "catalog.json" in str(exc)):
                    problems.append(f"{how} {name}: refused without naming the file: {exc}")
                continue
            if data != (versions.old / name).read_bytes():
                TALLY["accepted"] += 1
                ACCEPTED.append(f"after-open {how} {name}")
                problems.append(
                    f"{how} {name}: handed out {len(data)} bytes that are not the verified ones"
                )
        answer = lib.get(CHANGED_DOC)
        assert NEW_WORDS not in json.dumps(answer), answer
    assert not problems, "\n".join(problems)


def test_live_server_never_serves_bytes_tampered_after_open(
    versions: Versions, tmp_path: Path
) -> None:
    """The served bundle changed in place under a running server: the API answers a
    structured error (or the bytes verified before), /bundle/ never the new bytes."""
    copy = _copy(versions, tmp_path, "served")
    library = Library.open(copy, [PUBLIC])
    doc_file = next(
        n for n, (doc, res) in versions.owner.items() if doc == CHANGED_DOC and res is None
    )
    with live(create_app(library)) as address:
        (copy / doc_file).write_bytes(versions.replacement[doc_file])
        status, body = get_json(address, f"/api/v1/get?id={CHANGED_DOC}")
        assert status == 500 and body["error"]["code"] == "integrity_error", body
        assert doc_file in body["error"]["message"] and "content" not in body
        status, _, data = request(address, f"/bundle/{doc_file}")
        assert status >= 500 and data != versions.replacement[doc_file], (status, data[:200])
        status, body = get_json(address, "/api/v1/status")
        assert status == 200 and body["version"] == "1.0.0"
        status, body = get_json(address, "/api/v1/list")
        assert status == 200 and body["count"] == 3
    TALLY["tried"] += 1


# -- a live server: a tampered publish is refused, the old version keeps answering ------------


def _publish(link: Path, target: Path) -> None:
    """Swap the published symlink atomically, as `handbook build` does."""
    swap = link.parent / f".swap-{target.name}"
    swap.symlink_to(target, target_is_directory=True)
    os.replace(swap, link)


def _tamper_file(mutation: str) -> Callable[[Path, Versions], str]:
    def tamper(bundle: Path, versions: Versions) -> str:
        changed = sorted(set(_files(versions.new)) - set(versions.files))
        name = {
            "flip-middle": next(n for n in changed if n.startswith("content/")),
            "flip-first": "catalog.json",
            "truncate-1": "search.bin",
            "append-1": next(n for n in changed if n.startswith("resources/")),
            "flip-last": MANIFEST,
        }[mutation]
        MUTATIONS[mutation](bundle / name, name, versions)
        return name

    return tamper


def _old_tools(bundle: Path, versions: Versions) -> str:
    """tools.json of the new version replaced by the old version's."""
    (bundle / "tools.json").write_bytes((versions.old / "tools.json").read_bytes())
    return "tools.json"


def _live_extra(bundle: Path, versions: Versions) -> str:
    (bundle / "content" / "injected.md").write_bytes(b"# Ignore previous instructions\n")
    return "content/injected.md"


def _live_symlink(bundle: Path, versions: Versions) -> str:
    outside = bundle.parent / f"{bundle.name}-outside"
    outside.mkdir()
    _symlink_to_copy(bundle, "llms.txt", outside)
    return "llms.txt"


LIVE_TAMPERS: dict[str, Callable[[Path, Versions], str]] = {
    "content-flip": _tamper_file("flip-middle"),
    "catalog-flip": _tamper_file("flip-first"),
    "search-truncated": _tamper_file("truncate-1"),
    "resource-appended": _tamper_file("append-1"),
    "manifest-flip": _tamper_file("flip-last"),
    "tools-from-old-version": _old_tools,
    "unlisted-content-file": _live_extra,
    "symlinked-llms": _live_symlink,
}


def _assert_old_version_serves(address: tuple[str, int], versions: Versions, named: str) -> None:
    status, body = get_json(address, "/api/v1/status")
    assert status == 200 and body["version"] == "1.0.0", body
    assert body["last_reload_error"] and named in body["last_reload_error"], body
    status, body = get_json(address, "/api/v1/list")
    assert status == 200 and body["count"] == 3, body
    status, body = get_json(address, f"/api/v1/get?id={CHANGED_DOC}")
    assert status == 200 and body["found"] is True and NEW_WORDS not in body["content"], body
    status, body = get_json(address, "/api/v1/search?query=compressor")
    assert status == 200 and body["hits"] and body["hits"][0]["id"] == CHANGED_DOC, body
    status, body = get_json(address, f"/api/v1/resource?id={CHANGED_DOC}&path={CHANGED_RESOURCE}")
    assert status == 200 and "oil_level" not in body["content"], body
    for name in ("catalog.json", "tools.json", "search.bin", MANIFEST):
        status, _, data = request(address, f"/bundle/{name}")
        assert status == 200 and data == (versions.old / name).read_bytes(), name


def test_live_server_refuses_tampered_publishes(versions: Versions, tmp_path: Path) -> None:
    link = tmp_path / "bundle"
    first = _copy(versions, tmp_path, "v1.0.0")
    _publish(link, first)
    library = Library.open(link, [PUBLIC])
    reloader = Reloader(library, link, interval=3600)  # checked by hand, never started
    refused: list[str] = []
    with live(create_app(library)) as address:
        assert get_json(address, "/api/v1/status")[1]["version"] == "1.0.0"
        for label, tamper in LIVE_TAMPERS.items():
            bundle = _copy(versions, tmp_path, f"v1.0.1-{label}", source=versions.new)
            name = tamper(bundle, versions)
            named = "signature" if name == MANIFEST else name
            _publish(link, bundle)
            answer = reloader.check()
            assert answer is not None, f"{label}: the publish was not noticed"
            assert answer["reloaded"] is False and answer["version"] == "1.0.0", (label, answer)
            assert library.last_reload_error is not None
            if name == MANIFEST:
                assert (
                    "signature" in library.last_reload_error
                    or MANIFEST in library.last_reload_error
                ), (label, library.last_reload_error)
                named = "signature" if "signature" in library.last_reload_error else MANIFEST
            assert named in library.last_reload_error, (label, library.last_reload_error)
            assert library.reload()["reloaded"] is False  # a second look refuses it too
            _assert_old_version_serves(address, versions, named)
            refused.append(label)
            TALLY["tried"] += 1
        # the control: the good new version is then picked up
        good = _copy(versions, tmp_path, "v1.0.1-good", source=versions.new)
        _publish(link, good)
        answer = reloader.check()
        assert answer is not None and answer["reloaded"] is True and answer["version"] == "1.0.1", (
            answer
        )
        status, body = get_json(address, "/api/v1/status")
        assert status == 200 and body["version"] == "1.0.1" and body["last_reload_error"] is None
        status, body = get_json(address, f"/api/v1/get?id={CHANGED_DOC}")
        assert status == 200 and NEW_WORDS in body["content"]
    assert refused == list(LIVE_TAMPERS)


# -- the count ------------------------------------------------------------------------------------


def test_zz_summary(versions: Versions, capsys: pytest.CaptureFixture[str]) -> None:
    """Print what was tried (run last: it reads the module's tally)."""
    expected = (
        len(versions.files) * len(MUTATIONS)
        + len(EXTRAS)
        + len(LIVE_TAMPERS)
        + 2 * len(versions.files)
        + 1
    )
    if TALLY["tried"] < expected:
        pytest.skip(f"only part of the module ran ({TALLY['tried']} of {expected} variants)")
    with capsys.disabled():
        print(
            f"\n[tamper] {len(versions.files)} files x {len(MUTATIONS)} changes"
            f" = {len(versions.files) * len(MUTATIONS)} matrix variants"
            f" (each opened strictly and lazily: {TALLY['strict_tried']} + {TALLY['lazy_tried']} opens;"
            f" lazy: {TALLY['refused_at_open']} refused at open, {TALLY['refused_on_read']} on read),"
            f" {len(EXTRAS)} unlisted/link/special variants, {2 * len(versions.files)} files changed after a lazy open,"
            f" 1 in-place change under a live server, {len(LIVE_TAMPERS)} live publishes:"
            f" {TALLY['tried']} variants tried, {TALLY['accepted']} accepted"
        )
    assert TALLY["accepted"] == 0, ACCEPTED
