"""`handbook pack` writes the same bytes for the same bundle, and `handbook verify`
accepts its archives but refuses tampered or hostile ones."""

from __future__ import annotations

import calendar
import hashlib
import io
import os
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, run_cli
from release_helpers import EPOCH

import handbook.bundle.archive
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import MANIFEST, Manifest
from handbook.bundle.signing import generate_private_key
from handbook_build.tasks.pack import pack

pytest_plugins = ["release_fixtures"]
pytestmark = pytest.mark.usefixtures("clean_environment")


def members_of(archive: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(archive, "r:gz") as tar:
        out = []
        for member in tar.getmembers():
            source = tar.extractfile(member) if member.isfile() else None
            out.append((member, source.read() if source else None))
        return out


def write_archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def test_pack_is_deterministic(v1: Path, tmp_path: Path) -> None:
    first = run_cli("pack", str(v1), "-o", str(tmp_path / "one.tar.gz"))
    assert first.exit_code == 0, first.stderr
    assert first.lines[0] == f"packed plant-floor 1.0.0 (6 docs) -> {tmp_path / 'one.tar.gz'}"
    time.sleep(1.1)  # a later second, a copy with fresh file times, another path and name
    copy = tmp_path / "elsewhere" / "bundle"
    shutil.copytree(v1.resolve(), copy, copy_function=shutil.copy)
    for path in copy.rglob("*"):
        os.utime(path, (time.time() + 3600, time.time() + 3600))
    second = run_cli("pack", str(copy), "-o", str(tmp_path / "other-name.tgz"))
    assert second.exit_code == 0, second.stderr
    one, two = (tmp_path / "one.tar.gz").read_bytes(), (tmp_path / "other-name.tgz").read_bytes()
    assert one == two
    assert first.lines[1] == f"sha256 {hashlib.sha256(one).hexdigest()}"
    assert second.lines[1] == first.lines[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "elsewhere",
        "one.tar.gz",
        "other-name.tgz",
    ]  # no temporary left


def test_pack_headers_are_normalised(v1: Path, v1_archive: Path) -> None:
    raw = v1_archive.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert raw[4:8] == b"\0\0\0\0", "gzip header carries a time"
    assert not raw[3] & 0x08, "gzip header carries a file name"
    manifest = Manifest.from_bytes((v1 / MANIFEST).read_bytes())
    built_at = calendar.timegm(time.strptime(manifest.signed.built_at, "%Y-%m-%dT%H:%M:%SZ"))
    assert built_at == int(EPOCH)
    members = members_of(v1_archive)
    names = [m.name for m, _ in members]
    assert names[0] == MANIFEST, "readers check every later entry against the manifest"
    assert names[1:] == sorted(names[1:], key=lambda n: n.split("/"))
    assert len(set(names)) == len(names)
    files = {m.name for m, _ in members if m.isfile()}
    assert files == {MANIFEST, *open_bundle(v1, allow_unsigned=True).listing()}
    folders = {m.name for m, _ in members if m.isdir()}
    assert folders == {"content"}
    for n, name in enumerate(names):
        if "/" in name:
            assert name.rsplit("/", 1)[0] in names[:n], f"{name} comes before its folder"
    for member, data in members:
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
        assert member.mtime == built_at
        assert member.pax_headers == {}
        if member.isdir():
            assert member.mode == 0o755
        else:
            assert member.isfile() and member.mode == 0o644
            assert data == (v1 / member.name).read_bytes()


def with_extra_file(v1: Path, tmp_path: Path, name: str, data: bytes) -> Path:
    """A copy of the bundle that also lists `name` (valid: any safe path), re-signed."""
    from handbook.bundle.manifest import FileEntry
    from handbook.bundle.signing import MANIFEST_TAG, sign

    copy = tmp_path / "bundle"
    shutil.copytree(v1.resolve(), copy)
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    (copy / name).write_bytes(data)
    manifest = Manifest.from_bytes((copy / MANIFEST).read_bytes())
    files = {**manifest.signed.files, name: FileEntry(hashlib.sha256(data).hexdigest(), len(data))}
    signed = manifest.signed._replace(files=dict(sorted(files.items())))
    (copy / MANIFEST).write_bytes(
        Manifest(signed, (sign(KEY, MANIFEST_TAG, signed.to_dict()),)).to_bytes()
    )
    assert open_bundle(copy, [PUBLIC]).signature_state == "verified"
    return copy


def test_pack_writes_every_folder_before_its_files(v1: Path, tmp_path: Path) -> None:
    """A bundle whose manifest lists a file two folders deep."""
    pack(with_extra_file(v1, tmp_path, "extra/deep/file.txt", b"hello"), tmp_path / "deep.tar.gz")
    names = [m.name for m, _ in members_of(tmp_path / "deep.tar.gz")]
    for n, name in enumerate(names):
        if "/" in name:
            assert name.rsplit("/", 1)[0] in names[:n], f"no folder entry before {name}: {names}"


def test_pack_names_a_long_path_in_a_pax_header(v1: Path, tmp_path: Path) -> None:
    """Written by `handbook.bundle.tarstream`, read back the same by `tarfile` and by `verify`."""
    name = "extra/" + "long-" * 40 + ".txt"  # over the 100 bytes of a ustar name
    pack(with_extra_file(v1, tmp_path, name, b"hello"), tmp_path / "long.tar.gz")
    members = {m.name: (m, data) for m, data in members_of(tmp_path / "long.tar.gz")}
    member, data = members[name]
    assert member.pax_headers == {"path": name} and data == b"hello"
    assert [m.pax_headers for m, _ in members.values() if m.name != name] == [{}] * (
        len(members) - 1
    )
    run = run_cli("verify", str(tmp_path / "long.tar.gz"), "--key", PUBLIC)
    assert run.exit_code == 0, run.stderr


def test_verify_accepts_the_archive(v1_archive: Path) -> None:
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 0, run.stderr
    assert run.lines[-1] == "ok"
    assert any(line.startswith("signature verified by ") for line in run.lines)
    _, stranger = generate_private_key()
    refused = run_cli("verify", str(v1_archive), "--key", str(stranger))
    assert refused.exit_code == 1
    assert refused.stderr.startswith("refused:")


def test_verify_refuses_a_tampered_archive(v1_archive: Path, tmp_path: Path) -> None:
    members = members_of(v1_archive)
    content = next(
        n for n, (m, _) in enumerate(members) if m.name.startswith("content/") and m.isfile()
    )
    info, data = members[content]
    assert data is not None
    changed = data.replace(b"the", b"THE", 1)
    assert changed != data and len(changed) == len(data)
    members[content] = (info, changed)
    tampered = write_archive(tmp_path / "tampered.tar.gz", members)
    run = run_cli("verify", str(tampered), "--key", PUBLIC)
    assert run.exit_code == 1
    assert info.name in run.stderr and "sha256" in run.stderr

    extra = tarfile.TarInfo("extra.txt")
    extra.size = 5
    appended = write_archive(
        tmp_path / "appended.tar.gz", [*members_of(v1_archive), (extra, b"hello")]
    )
    run = run_cli("verify", str(appended), "--key", PUBLIC)
    assert run.exit_code == 1
    assert "extra.txt" in run.stderr and "not listed" in run.stderr


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = b"x", **fields: Any
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if data is not None and kind == tarfile.REGTYPE else 0
    for field, value in fields.items():
        setattr(info, field, value)
    return info, data if kind == tarfile.REGTYPE else None


HOSTILE: dict[str, tuple[Callable[[Path], tuple[tarfile.TarInfo, bytes | None]], str]] = {
    "symlink": (
        lambda tmp: _member("evil", tarfile.SYMTYPE, linkname="/etc/passwd"),
        "is a link or special file",
    ),
    "hardlink": (
        lambda tmp: _member("evil", tarfile.LNKTYPE, linkname="catalog.json"),
        "is a link or special file",
    ),
    "parent": (lambda tmp: _member("../x"), "'..' segment"),
    "nested parent": (lambda tmp: _member("content/../../x"), "'..' segment"),
    "absolute": (lambda tmp: _member(str(tmp / "escaped")), "is empty or absolute"),
    "duplicate": (lambda tmp: _member("catalog.json"), "catalog.json appears twice"),
    "duplicate by case": (lambda tmp: _member("CATALOG.json"), "appears twice"),
    "fifo": (lambda tmp: _member("fifo", tarfile.FIFOTYPE), "is a link or special file"),
    "character device": (
        lambda tmp: _member("null", tarfile.CHRTYPE, devmajor=1, devminor=3),
        "is a link or special file",
    ),
    "block device": (
        lambda tmp: _member("disk", tarfile.BLKTYPE, devmajor=8, devminor=0),
        "is a link or special file",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_verify_refuses_a_hostile_archive(v1_archive: Path, tmp_path: Path, case: str) -> None:
    make, message = HOSTILE[case]
    inside = tmp_path / "inside"
    inside.mkdir()
    archive = write_archive(inside / "hostile.tar.gz", [*members_of(v1_archive), make(tmp_path)])
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr.startswith(f"refused: {archive}: ")
    assert message in run.stderr
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "x").exists() and not (inside / "x").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([_member("catalog.json/x")], "catalog.json/x is not listed in the manifest"),
        ([_member("content/a"), _member("content/a/b")], "content/a is not listed in the manifest"),
        (
            [_member("catalog.json", tarfile.DIRTYPE)],
            "folder catalog.json holds no file the manifest lists",
        ),
        ([_member("content", tarfile.DIRTYPE)], "content appears twice in the archive"),
    ],
    ids=["file as folder", "file in file", "folder as file", "folder twice"],
)
def test_verify_refuses_an_entry_the_manifest_does_not_list(
    v1_archive: Path,
    tmp_path: Path,
    extra: list[tuple[tarfile.TarInfo, bytes | None]],
    message: str,
) -> None:
    """A file or folder clash cannot get past the listing: every file is listed, every
    folder holds a listed path, and the manifest lists no path as both."""
    archive = write_archive(tmp_path / "clash.tar.gz", [*members_of(v1_archive), *extra])
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr == f"refused: {archive}: {message}\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a gzip at all", "not a readable .tar.gz bundle archive"),
        (None, "not a readable .tar.gz bundle archive"),  # truncated
    ],
)
def test_verify_refuses_an_unreadable_archive(
    v1_archive: Path, tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "broken.tar.gz"
    raw = v1_archive.read_bytes()
    path.write_bytes(content if content is not None else raw[: len(raw) // 2])
    run = run_cli("verify", str(path), "--key", PUBLIC)
    assert run.exit_code == 1
    assert message in run.stderr


def test_verify_refuses_an_archive_without_a_manifest_at_the_top(
    v1_archive: Path, tmp_path: Path
) -> None:
    nested = []
    for info, data in members_of(v1_archive):
        info.name = f"bundle/{info.name}"
        nested.append((info, data))
    archive = write_archive(tmp_path / "nested.tar.gz", nested)
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr == (
        f"refused: {archive}: the archive starts with bundle/manifest.json, not {MANIFEST} "
        "(archives from `handbook pack` before the manifest came first must be packed again)\n"
    )
    empty = write_archive(tmp_path / "empty.tar.gz", [])
    run = run_cli("verify", str(empty), "--key", PUBLIC)
    assert run.stderr == f"refused: {empty}: the archive is empty; it must start with {MANIFEST}\n"


def test_verify_caps_members_and_size_before_unpacking(
    v1_archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the manifest's listing first; then entry by entry, folders included."""
    files = len(Manifest.from_bytes(members_of(v1_archive)[0][1] or b"").signed.files)
    prefix = f"refused: {v1_archive}: "
    monkeypatch.setattr(handbook.bundle.archive, "MAX_MEMBERS", 5)
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert (
        run.stderr
        == f"{prefix}{files + 1} files with the manifest, over the 5 a bundle archive may have\n"
    )
    monkeypatch.setattr(handbook.bundle.archive, "MAX_MEMBERS", files + 1)  # the folder is one more
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr.startswith(f"{prefix}entry {files + 2} (")
    assert run.stderr.endswith(f") is over the {files + 1} a bundle archive may have\n")
    monkeypatch.setattr(handbook.bundle.archive, "MAX_MEMBERS", 200_000)
    monkeypatch.setattr(handbook.bundle.archive, "MAX_TOTAL_BYTES", 1000)
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr.startswith(f"{prefix}the manifest lists ")
    assert run.stderr.endswith(" bytes, over the 1,000 a bundle archive may hold\n")


def test_pack_refuses_a_bundle_over_the_readers_caps(
    v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive that `verify` would refuse is never written."""
    monkeypatch.setattr(handbook.bundle.archive, "MAX_MEMBERS", 5)
    out = tmp_path / "bundle.tar.gz"
    run = run_cli("pack", str(v1), "-o", str(out))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"refused: {out}: ")
    assert run.stderr.endswith(" files with the manifest, over the 5 a bundle archive may have\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["edited", "unlisted", "missing"])
def test_pack_refuses_a_tampered_bundle_and_writes_nothing(
    v1: Path, tmp_path: Path, damage: str
) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(v1.resolve(), copy)
    victim = sorted((copy / "content").iterdir())[0]
    if damage == "edited":
        victim.write_bytes(victim.read_bytes().replace(b"the", b"THE", 1))
    elif damage == "unlisted":
        (copy / "content" / "extra.md").write_text("# extra\n")
    else:
        victim.unlink()
    out = tmp_path / "out"
    out.mkdir()
    run = run_cli("pack", str(copy), "-o", str(out / "bundle.tar.gz"))
    assert run.exit_code == 1
    assert run.stderr.startswith("refused:")
    assert list(out.iterdir()) == []


def test_pack_wants_an_archive_name(v1: Path, tmp_path: Path) -> None:
    run = run_cli("pack", str(v1), "-o", str(tmp_path / "bundle.zip"))
    assert run.exit_code == 2
    assert not (tmp_path / "bundle.zip").exists()
