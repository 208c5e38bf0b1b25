"""Releases end to end: `handbook init` starts a library that passes its own check and
whose workflow is valid; `handbook pack` writes the same bytes for the same bundle and
`handbook verify` refuses tampered or hostile archives; `handbook diff` names the
version bump a change calls for; `handbook release` versions, builds, signs, packs,
commits and tags in a real git repository, or changes nothing at all."""

from __future__ import annotations

import calendar
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import ROOT, VALID_DOC, run_cli

import handbook
import handbook.archive
from handbook.bundle import open_bundle
from handbook.manifest import MANIFEST, Manifest
from handbook.signing import generate_private_key, load_private_key, public_key_of
from handbook_build import load_config
from handbook_build.pack import pack
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor"
KEY_FILE = ROOT / "tests" / "vectors" / "test-key.pem"
KEY_PEM = KEY_FILE.read_text()
KEY = load_private_key(KEY_FILE.read_bytes())
PUBLIC = str(public_key_of(KEY))
EPOCH = "1767225600"  # 2026-01-01T00:00:00Z

INIT_FILES = [
    "mkdocs.yml",
    "docs/index.md",
    "docs/guides/writing-docs.md",
    ".gitignore",
    ".github/workflows/handbook.yml",
]


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reproducible builds, no key or trust from the outside, and git that reads only
    the test repositories' own configuration."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    for name in (
        "CI",
        "HANDBOOK_SIGNING_KEY",
        "HANDBOOK_TRUSTED_KEYS",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def build_bundle(config: Path, out: Path) -> Path:
    """A signed, reproducible build of the library at `config`; the published path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.delenv("HANDBOOK_TRUSTED_KEYS", raising=False)
        build(load_config(config), out, KEY)
    return out


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def substitute(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# --- handbook init --------------------------------------------------------------------


def workflow_of(folder: Path) -> dict[str, Any]:
    """The workflow as GitHub reads it. PyYAML follows YAML 1.1, where the key `on` is
    the boolean true; GitHub (and check-jsonschema's YAML 1.2 loader) read a string."""
    loaded = yaml.safe_load(
        (folder / ".github" / "workflows" / "handbook.yml").read_text(encoding="utf-8")
    )
    assert isinstance(loaded, dict)
    if True in loaded:
        loaded["on"] = loaded.pop(True)
    return loaded


def github_workflow_schema() -> dict[str, Any]:
    """The GitHub workflow schema vendored by the `check-jsonschema` package."""
    spec = importlib.util.find_spec("check_jsonschema")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "check-jsonschema is not installed (pip install check-jsonschema): "
            "the workflow cannot be validated against GitHub's schema"
        )
    found = sorted(
        p
        for location in spec.submodule_search_locations
        for p in Path(location).rglob("github-workflows.json")
    )
    assert found, "check-jsonschema no longer vendors github-workflows.json"
    schema: dict[str, Any] = json.loads(found[0].read_text(encoding="utf-8"))
    return schema


def test_init_writes_a_library_that_passes_its_own_strict_check(tmp_path: Path) -> None:
    folder = tmp_path / "plant"
    run = run_cli("init", str(folder))
    assert run.exit_code == 0, run.stderr
    assert sorted(files_of(folder)) == sorted(INIT_FILES)
    for rel in INIT_FILES:
        assert f"wrote {folder / rel}" in run.stdout
    check = run_cli("check", "--strict", "--config", str(folder / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout + check.stderr
    assert "2 files checked (2 docs): 0 errors, 0 warnings" in check.stdout + check.stderr
    config = load_config(folder / "mkdocs.yml")
    assert config.library == "plant"
    assert config.version == "0.1.0"
    ignored = (folder / ".gitignore").read_text().splitlines()
    assert {"build/", "*.key", "*.pem"} <= set(ignored)


def test_init_takes_name_and_title_and_derives_a_name_from_the_folder(tmp_path: Path) -> None:
    named = run_cli("init", str(tmp_path / "a"), "--name", "line-2.docs", "--title", "Line two")
    assert named.exit_code == 0, named.stderr
    assert load_config(tmp_path / "a" / "mkdocs.yml").library == "line-2.docs"
    assert yaml.safe_load((tmp_path / "a" / "mkdocs.yml").read_text())["site_name"] == "Line two"
    assert "id: line-2.docs.overview" in (tmp_path / "a" / "docs" / "index.md").read_text()

    derived = run_cli("init", str(tmp_path / "My Plant Docs"))
    assert derived.exit_code == 0, derived.stderr
    assert load_config(tmp_path / "My Plant Docs" / "mkdocs.yml").library == "my-plant-docs"
    check = run_cli("check", "--strict", "--config", str(tmp_path / "My Plant Docs" / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout


@pytest.mark.parametrize("title", ["Plant floor: line 2", "#1 plant docs", "[draft] plant docs"])
def test_init_keeps_any_title_intact(tmp_path: Path, title: str) -> None:
    folder = tmp_path / "lib"
    assert run_cli("init", str(folder), "--title", title).exit_code == 0
    check = run_cli("check", "--strict", "--config", str(folder / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout + check.stderr
    assert yaml.safe_load((folder / "mkdocs.yml").read_text())["site_name"] == title
    assert (
        yaml.safe_load((folder / "docs" / "index.md").read_text().split("---")[1])["title"] == title
    )


def test_second_init_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    assert run_cli("init", str(folder)).exit_code == 0
    (folder / "docs" / "index.md").write_text("edited by the author\n")
    before = files_of(folder)
    again = run_cli("init", str(folder))
    assert again.exit_code == 2
    assert "already exist" in again.stderr
    assert files_of(folder) == before


def test_init_overwrites_no_single_file_and_writes_nothing_then(tmp_path: Path) -> None:
    folder = tmp_path / "existing"
    folder.mkdir()
    (folder / ".gitignore").write_text("mine\n")
    run = run_cli("init", str(folder))
    assert run.exit_code == 2
    assert ".gitignore" in run.stderr
    assert files_of(folder) == {".gitignore": b"mine\n"}


@pytest.mark.parametrize("name", ["Bad Name", "a..b", "UPPER", "x/y"])
def test_init_refuses_a_bad_name(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "lib"
    run = run_cli("init", str(folder), "--name", name)
    assert run.exit_code == 2
    assert "is not a library name" in run.stderr
    assert not folder.exists()


def test_init_workflow_is_valid_for_github(tmp_path: Path) -> None:
    assert run_cli("init", str(tmp_path / "lib")).exit_code == 0
    schema = github_workflow_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    assert schema.get("$schema", "").startswith("http://json-schema.org/draft-07")
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    workflow = workflow_of(tmp_path / "lib")
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(workflow)
    ]
    assert errors == []
    # the schema does catch a broken workflow
    broken = {**workflow, "jobs": {"check": {"steps": [{"run": "x"}]}}}
    assert list(validator.iter_errors(broken))


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _step_running(job: dict[str, Any], command: str) -> tuple[int, dict[str, Any]]:
    found = [(n, s) for n, s in enumerate(_steps(job)) if command in s.get("run", "")]
    assert len(found) == 1, f"expected one step running {command!r}, found {len(found)}"
    return found[0]


def _step_using(job: dict[str, Any], action: str) -> tuple[int, dict[str, Any]]:
    found = [(n, s) for n, s in enumerate(_steps(job)) if s.get("uses", "").split("@")[0] == action]
    assert len(found) == 1, f"expected one step using {action}, found {len(found)}"
    return found[0]


def test_init_workflow_checks_every_push_and_releases_tags(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    assert run_cli("init", str(folder)).exit_code == 0
    workflow = workflow_of(folder)
    triggers = workflow["on"]
    assert "push" in triggers and "pull_request" in triggers
    assert not (triggers.get("push") or {}).get("branches"), "tags must trigger the workflow too"
    assert f"handbook=={handbook.__version__}" in json.dumps(workflow)

    jobs = workflow["jobs"]
    checking = [
        name
        for name, job in jobs.items()
        if any("handbook check --format github" in s.get("run", "") for s in _steps(job))
    ]
    assert len(checking) == 1
    assert "if" not in jobs[checking[0]], "the check must run on every push and pull request"

    releasing = [name for name, job in jobs.items() if "refs/tags/v" in str(job.get("if", ""))]
    assert len(releasing) == 1
    job = jobs[releasing[0]]
    needs = job.get("needs", [])
    assert checking[0] in ([needs] if isinstance(needs, str) else needs)
    permissions = job["permissions"]
    assert (
        permissions["contents"] == "write"
        and permissions["pages"] == "write"
        and permissions["id-token"] == "write"
    )

    build_at, build_step = _step_running(job, "mkdocs build --strict")
    assert (
        build_step["env"]["HANDBOOK_SIGNING_KEY"].replace(" ", "")
        == "${{secrets.HANDBOOK_SIGNING_KEY}}"
    )
    pack_at, pack_step = _step_running(job, "handbook pack")
    packed = re.search(r"handbook pack (\S+) -o (\S+)", pack_step["run"])
    assert packed, pack_step["run"]
    config = yaml.safe_load((folder / "mkdocs.yml").read_text())
    assert packed.group(1) == "build/bundle"  # where `mkdocs build` publishes the bundle by default
    upload_at, upload_step = _step_running(job, "gh release create")
    assert packed.group(2) in upload_step["run"], "the release must carry the packed archive"
    assert "GH_TOKEN" in upload_step.get("env", {})
    pages_at, pages_step = _step_using(job, "actions/upload-pages-artifact")
    assert pages_step["with"]["path"] == config["site_dir"]
    deploy_at, _ = _step_using(job, "actions/deploy-pages")
    assert build_at < pack_at < upload_at
    assert build_at < pages_at < deploy_at


def test_init_workflow_release_steps_work_on_the_new_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release job's commands, run here: mkdocs build --strict with the key in the
    environment, then `handbook pack` of what it published; the archive verifies."""
    folder = tmp_path / "lib"
    assert run_cli("init", str(folder)).exit_code == 0
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDBOOK_SIGNING_KEY")}
    env.update(SOURCE_DATE_EPOCH=EPOCH, NO_MKDOCS_2_WARNING="1", HANDBOOK_SIGNING_KEY=KEY_PEM)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (folder / "build" / "site" / "index.html").is_file()
    monkeypatch.chdir(folder)
    packed = run_cli("pack", "build/bundle", "-o", "bundle-v0.1.0.tar.gz")
    assert packed.exit_code == 0, packed.stderr
    verified = run_cli("verify", "bundle-v0.1.0.tar.gz", "--key", PUBLIC)
    assert verified.exit_code == 0, verified.stderr
    assert verified.lines[-1] == "ok"


# --- handbook pack / verify ---------------------------------------------------------------


@pytest.fixture(scope="module")
def v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example library, built and signed once (the published symlink)."""
    return build_bundle(EXAMPLE / "mkdocs.yml", tmp_path_factory.mktemp("v1") / "bundle")


@pytest.fixture(scope="module")
def v1_archive(v1: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("v1-archive") / "plant-floor-1.0.0.tar.gz"
    pack(v1, out)
    return out


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
    assert names == sorted(names, key=lambda n: n.split("/"))
    assert len(set(names)) == len(names)
    files = {m.name for m, _ in members if m.isfile()}
    assert files == {MANIFEST, *manifest.signed.files}
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


def test_pack_writes_every_folder_before_its_files(v1: Path, tmp_path: Path) -> None:
    """A bundle whose manifest lists a file two folders deep (valid: any safe path)."""
    from handbook.manifest import FileEntry
    from handbook.signing import MANIFEST_TAG, sign

    copy = tmp_path / "bundle"
    shutil.copytree(v1.resolve(), copy)
    (copy / "extra" / "deep").mkdir(parents=True)
    (copy / "extra" / "deep" / "file.txt").write_bytes(b"hello")
    manifest = Manifest.from_bytes((copy / MANIFEST).read_bytes())
    files = {
        **manifest.signed.files,
        "extra/deep/file.txt": FileEntry(hashlib.sha256(b"hello").hexdigest(), 5),
    }
    signed = manifest.signed._replace(files=dict(sorted(files.items())))
    (copy / MANIFEST).write_bytes(
        Manifest(signed, (sign(KEY, MANIFEST_TAG, signed.to_dict()),)).to_bytes()
    )
    assert open_bundle(copy, [PUBLIC]).signature_state == "verified"
    pack(copy, tmp_path / "deep.tar.gz")
    names = [m.name for m, _ in members_of(tmp_path / "deep.tar.gz")]
    for n, name in enumerate(names):
        if "/" in name:
            assert name.rsplit("/", 1)[0] in names[:n], f"no folder entry before {name}: {names}"


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


@pytest.mark.parametrize("order", [["catalog.json/x"], ["content/a", "content/a/b"]])
def test_verify_refuses_a_file_used_as_a_folder(
    v1_archive: Path, tmp_path: Path, order: list[str]
) -> None:
    archive = write_archive(
        tmp_path / "clash.tar.gz", [*members_of(v1_archive), *(_member(name) for name in order)]
    )
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr.startswith(f"refused: {archive}: ")


def test_verify_names_the_entry_of_a_file_folder_clash(v1_archive: Path, tmp_path: Path) -> None:
    archive = write_archive(
        tmp_path / "clash.tar.gz",
        [*members_of(v1_archive), _member("content/a"), _member("content/a/b")],
    )
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1
    assert "handbook-bundle-" not in run.stderr, run.stderr
    assert "content/a/b" in run.stderr, run.stderr


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
    run = run_cli("verify", str(write_archive(tmp_path / "nested.tar.gz", nested)), "--key", PUBLIC)
    assert run.exit_code == 1
    assert f"no {MANIFEST} at the top of the archive" in run.stderr


def test_verify_caps_members_and_size_before_unpacking(
    v1_archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handbook.archive, "MAX_MEMBERS", 5)
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 1 and "over the 5 a bundle may have" in run.stderr
    monkeypatch.setattr(handbook.archive, "MAX_MEMBERS", 200_000)
    monkeypatch.setattr(handbook.archive, "MAX_TOTAL_BYTES", 1000)
    run = run_cli("verify", str(v1_archive), "--key", PUBLIC)
    assert run.exit_code == 1 and "more than 1,000 bytes unpacked" in run.stderr


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


# --- handbook diff ----------------------------------------------------------------------


def library_copy(tmp_path: Path) -> Path:
    target = tmp_path / "lib"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("build", "site", "__pycache__"))
    return target


def together(*mutations: Callable[[Path], None]) -> Callable[[Path], None]:
    def mutate(lib: Path) -> None:
        for mutation in mutations:
            mutation(lib)

    return mutate


def _edit_body(lib: Path) -> None:
    substitute(
        lib / "docs" / "devices" / "acme-ac200.md",
        "Its\ncontroller speaks",
        "Its\ncontroller only speaks",
    )


def _add_doc(lib: Path) -> None:
    (lib / "docs" / "guides" / "troubleshooting.md").write_text(
        VALID_DOC.format(id="guide.troubleshooting"), encoding="utf-8"
    )


def _add_section(lib: Path) -> None:
    path = lib / "docs" / "devices" / "acme-ac200.md"
    path.write_text(
        path.read_text(encoding="utf-8") + "\n## Troubleshooting\n\nRestart the controller.\n",
        encoding="utf-8",
    )


def _remove_doc(lib: Path) -> None:
    (lib / "docs" / "protocols" / "mqtt.md").unlink()


def _remove_section(lib: Path) -> None:
    path = lib / "docs" / "devices" / "acme-ac200.md"
    text = path.read_text(encoding="utf-8")
    start = text.index("## Pitfalls")
    path.write_text(text[:start] + text[text.index("## Collector snippet") :], encoding="utf-8")


def _remove_vocab_value(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "protocol: [modbus, mqtt, opcua]", "protocol: [modbus, mqtt]")


def _add_vocab_value(lib: Path) -> None:
    substitute(
        lib / "mkdocs.yml",
        "protocol: [modbus, mqtt, opcua]",
        "protocol: [modbus, mqtt, opcua, bacnet]",
    )


def _require_field(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "      vocab:\n", "      required: [verified]\n      vocab:\n")


def _new_version_only(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "version: 1.0.0", "version: 1.0.1")


def _retitle(lib: Path) -> None:
    substitute(
        lib / "docs" / "index.md",
        "title: About this handbook\n",
        "title: About the plant-floor handbook\n",
    )


SCENARIOS: dict[str, tuple[Callable[[Path], None], str, Callable[[dict[str, Any]], bool]]] = {
    "identical": (
        lambda lib: None,
        "none",
        lambda r: r["added"] == r["removed"] == r["changed"] == r["reasons"] == [],
    ),
    "new version number only": (
        _new_version_only,
        "none",
        lambda r: (
            r["changed"] == [] and r["old"]["version"] == "1.0.0" and r["new"]["version"] == "1.0.1"
        ),
    ),
    "body edited": (
        _edit_body,
        "patch",
        lambda r: (
            [c["id"] for c in r["changed"]] == ["device.acme.ac200"]
            and r["changed"][0]["content_changed"]
            and r["changed"][0]["sections_added"] == r["changed"][0]["sections_removed"] == []
        ),
    ),
    "title edited": (
        _retitle,
        "patch",
        lambda r: (
            r["changed"][0]["metadata"]
            == {"title": ["About this handbook", "About the plant-floor handbook"]}
        ),
    ),
    "doc added": (
        _add_doc,
        "minor",
        lambda r: r["added"] == ["guide.troubleshooting"] and r["removed"] == [],
    ),
    "section added": (
        _add_section,
        "minor",
        lambda r: (
            [(c["id"], c["sections_added"], c["sections_removed"]) for c in r["changed"]]
            == [("device.acme.ac200", ["troubleshooting"], [])]
        ),
    ),
    "vocabulary value added": (
        _add_vocab_value,
        "minor",
        lambda r: r["contract"]["vocab_added"] == {"protocol": ["bacnet"]},
    ),
    "doc removed": (
        _remove_doc,
        "major",
        lambda r: r["removed"] == ["protocol.mqtt"] and r["added"] == [],
    ),
    "section removed": (
        _remove_section,
        "major",
        lambda r: (
            [(c["id"], c["sections_removed"]) for c in r["changed"]]
            == [("device.acme.ac200", ["pitfalls"])]
        ),
    ),
    "vocabulary value removed": (
        _remove_vocab_value,
        "major",
        lambda r: r["contract"]["vocab_removed"] == {"protocol": ["opcua"]},
    ),
    "field made required": (
        _require_field,
        "major",
        lambda r: r["contract"]["required_added"] == ["verified"],
    ),
    "doc added and one removed": (
        together(_add_doc, _remove_doc),
        "major",
        lambda r: r["added"] == ["guide.troubleshooting"] and r["removed"] == ["protocol.mqtt"],
    ),
}


def build_variant(tmp_path: Path, mutate: Callable[[Path], None]) -> Path:
    lib = library_copy(tmp_path)
    mutate(lib)
    return build_bundle(lib / "mkdocs.yml", tmp_path / "v2" / "bundle")


def diff_json(old: Path, new: Path, *extra: str) -> dict[str, Any]:
    run = run_cli("diff", str(old), str(new), "--json", *extra)
    assert run.exit_code == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_diff_names_the_bump(v1: Path, tmp_path: Path, scenario: str) -> None:
    mutate, bump, details = SCENARIOS[scenario]
    v2 = build_variant(tmp_path, mutate)
    report = diff_json(v1, v2, "--key", PUBLIC)
    assert report["bump"] == bump, report["reasons"]
    assert details(report), json.dumps(report, indent=1)
    assert report["old"]["library"] == report["new"]["library"] == "plant-floor"
    if bump != "none":
        assert report["reasons"]
    # going back undoes it: what was added is removed and vice versa
    back = diff_json(v2, v1)
    assert back["added"] == report["removed"] and back["removed"] == report["added"]


def test_diff_a_dropped_vocabulary_loosens_the_contract(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(
        tmp_path,
        lambda lib: substitute(
            lib / "mkdocs.yml",
            "        equipment_type: [air_compressor, energy_meter, plc, gateway]\n",
            "",
        ),
    )
    report = diff_json(v1, v2)
    assert report["bump"] == "minor", report


def test_diff_a_new_vocabulary_tightens_the_contract(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(
        tmp_path,
        lambda lib: substitute(
            lib / "mkdocs.yml",
            "      vocab:\n",
            "      vocab:\n        verified_by: [alice, bob]\n",
        ),
    )
    report = diff_json(v1, v2)
    assert report["bump"] == "major"
    assert list(report["contract"]["vocab_removed"]) == ["verified_by"]


def test_diff_works_on_archives_and_folders_alike(
    v1: Path, v1_archive: Path, tmp_path: Path
) -> None:
    v2 = build_variant(tmp_path, _add_section)
    v2_archive = tmp_path / "v2.tar.gz"
    pack(v2, v2_archive)
    folders = diff_json(v1, v2)
    assert folders["bump"] == "minor"
    assert diff_json(v1_archive, v2_archive, "--key", PUBLIC) == folders
    assert diff_json(v1_archive, v2) == folders
    assert diff_json(v1, v2_archive) == folders


def test_diff_text_names_the_bump_and_the_changes(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(tmp_path, together(_add_section, _retitle))
    run = run_cli("diff", str(v1), str(v2))
    assert run.exit_code == 0, run.stderr
    assert run.lines[0] == "plant-floor 1.0.0 -> plant-floor 1.0.0: suggested bump MINOR"
    assert "  - 1 section(s) added: device.acme.ac200#troubleshooting" in run.lines
    assert "  - 1 doc(s) changed: guide.about" in run.lines
    assert "  changed device.acme.ac200 (+#troubleshooting)" in run.lines
    assert (
        "  changed guide.about (title: 'About this handbook' -> 'About the plant-floor handbook')"
        in run.lines
    )


def test_diff_refuses_a_damaged_or_untrusted_bundle(
    v1: Path, v1_archive: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(v1.resolve(), copy)
    victim = sorted((copy / "content").iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"\n")
    damaged = run_cli("diff", str(v1), str(copy), "--json")
    assert damaged.exit_code == 1 and damaged.stderr.startswith("refused:") and damaged.stdout == ""
    _, stranger = generate_private_key()
    untrusted = run_cli("diff", str(v1_archive), str(v1), "--key", str(stranger))
    assert untrusted.exit_code == 1 and untrusted.stderr.startswith("refused:")


# --- handbook release -------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A new library, committed on `main` in a fresh git repository."""
    root = tmp_path / "floor"
    assert run_cli("init", str(root)).exit_code == 0
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test Releaser")
    git(root, "config", "user.email", "releaser@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "tag.gpgsign", "false")
    commit_all(root, "Start the library")
    return root


@pytest.fixture
def signing_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDBOOK_SIGNING_KEY", KEY_PEM)


def state(repo: Path) -> tuple[str, bytes, str, str, str]:
    """Everything a refused release must leave alone."""
    return (
        git(repo, "rev-parse", "HEAD"),
        (repo / "mkdocs.yml").read_bytes(),
        git(repo, "tag", "--list"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "stash", "list"),
    )


def release(repo: Path, *args: str) -> Any:
    return run_cli("release", *args, "--config", str(repo / "mkdocs.yml"))


@pytest.mark.usefixtures("signing_env")
def test_release_bumps_builds_commits_and_tags(repo: Path, tmp_path: Path) -> None:
    before_lines = (repo / "mkdocs.yml").read_text().splitlines()
    start = git(repo, "rev-parse", "HEAD")
    run = release(repo, "--minor")
    assert run.exit_code == 0, run.stderr

    assert load_config(repo / "mkdocs.yml").version == "0.2.0"
    after_lines = (repo / "mkdocs.yml").read_text().splitlines()
    assert len(after_lines) == len(before_lines)
    changed = [(old, new) for old, new in zip(before_lines, after_lines, strict=True) if old != new]
    assert len(changed) == 1
    old, new = changed[0]
    assert old == "      version: 0.1.0"
    assert new in ('      version: "0.2.0"', "      version: '0.2.0'", "      version: 0.2.0")

    head = git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD~1") == start
    assert git(repo, "log", "-1", "--format=%s") == "Release floor 0.2.0"
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "mkdocs.yml"
    assert git(repo, "cat-file", "-t", "v0.2.0") == "tag"  # annotated
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == head
    assert git(repo, "tag", "--list") == "v0.2.0"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"

    archive = repo / "build" / "release" / "floor-0.2.0.tar.gz"
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert run.lines[0].startswith(f"released v0.2.0 (commit {head[:12]}); archive ")
    assert run.lines[0].endswith(f"sha256 {digest}")
    assert run.lines[1] == "not pushed: git push origin main v0.2.0"
    verified = run_cli("verify", str(archive), "--key", PUBLIC)
    assert verified.exit_code == 0, verified.stderr
    # the archive is the packed bundle of the released version, signed by the key
    bundle = open_bundle(repo / "build" / "bundle", [PUBLIC])
    assert bundle.signature_state == "verified"
    assert (
        bundle.manifest.signed.library,
        bundle.manifest.signed.version,
        bundle.manifest.signed.docs,
    ) == ("floor", "0.2.0", 2)
    repacked = tmp_path / "repacked.tar.gz"
    pack(repo / "build" / "bundle", repacked)
    assert repacked.read_bytes() == archive.read_bytes()


@pytest.mark.usefixtures("signing_env")
def test_release_refuses_versions_that_do_not_increase(repo: Path) -> None:
    assert release(repo, "--minor").exit_code == 0
    for version in ("0.2.0", "0.1.5", "0.2.0-rc.1"):
        before = state(repo)
        run = release(repo, version)
        assert run.exit_code == 1, version
        assert "does not come after the current version 0.2.0" in run.stderr
        assert state(repo) == before
    assert not (repo / "build" / "release" / "floor-0.1.5.tar.gz").exists()
    # a pre-release, then its release, then a patch: each comes after the last
    for version, expected in (
        ("1.0.0-rc.1", "1.0.0-rc.1"),
        ("1.0.0", "1.0.0"),
        ("--patch", "1.0.1"),
    ):
        run = release(repo, version)
        assert run.exit_code == 0, run.stderr
        assert load_config(repo / "mkdocs.yml").version == expected
    assert git(repo, "tag", "--list").split() == ["v0.2.0", "v1.0.0", "v1.0.0-rc.1", "v1.0.1"]


def _other_branch(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "switch", "-q", "-c", "feature")


def _edited(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = repo / "docs" / "index.md"
    path.write_text(path.read_text() + "\nMore.\n")


def _untracked(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "docs" / "guides" / "draft.md").write_text(VALID_DOC.format(id="floor.draft"))


def _staged(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _untracked(repo, monkeypatch)
    git(repo, "add", "docs/guides/draft.md")


def _tagged(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "tag", "-a", "v0.3.0", "-m", "made by hand")


def _no_key(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY")


def _broken_doc(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "docs" / "guides" / "broken.md").write_text(
        "---\nid: floor.broken\ntitle: [unclosed\n---\n# Broken\n"
    )
    commit_all(repo, "Add a broken doc")


REFUSALS: dict[str, tuple[Callable[[Path, pytest.MonkeyPatch], None], list[str], str]] = {
    "another branch": (
        _other_branch,
        ["--minor"],
        "on branch 'feature'; releases are made from 'main'",
    ),
    "uncommitted edit": (_edited, ["--minor"], "uncommitted changes"),
    "untracked file": (_untracked, ["--minor"], "uncommitted changes"),
    "staged file": (_staged, ["--minor"], "uncommitted changes"),
    "same version": (
        lambda repo, mp: None,
        ["0.1.0"],
        "does not come after the current version 0.1.0",
    ),
    "lower version": (
        lambda repo, mp: None,
        ["0.0.9"],
        "does not come after the current version 0.1.0",
    ),
    "not a version": (lambda repo, mp: None, ["1.2"], "is not a semantic version"),
    "existing tag": (_tagged, ["0.3.0"], "tag v0.3.0 already exists"),
    "no signing key": (_no_key, ["--patch"], "no signing key"),
    "malformed signing key": (
        lambda repo, mp: mp.setenv("HANDBOOK_SIGNING_KEY", "not a key"),
        ["--patch"],
        "$HANDBOOK_SIGNING_KEY is not",
    ),
    "strict build fails": (
        _broken_doc,
        ["--minor"],
        "the strict build failed; nothing was committed",
    ),
}


@pytest.mark.usefixtures("signing_env")
@pytest.mark.parametrize("case", list(REFUSALS))
def test_release_refuses_and_changes_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    prepare, args, message = REFUSALS[case]
    prepare(repo, monkeypatch)
    before = state(repo)
    run = release(repo, *args)
    assert run.exit_code == 1, run.stdout
    assert run.stderr.startswith("refused: ")
    assert message in run.stderr
    assert state(repo) == before
    assert not (repo / "build" / "release").exists()


@pytest.mark.usefixtures("signing_env")
def test_release_strict_build_failure_names_the_finding(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _broken_doc(repo, monkeypatch)
    original = (repo / "mkdocs.yml").read_bytes()
    run = release(repo, "--minor")
    assert run.exit_code == 1
    assert "broken.md" in run.stderr
    assert (repo / "mkdocs.yml").read_bytes() == original
    assert not (repo / "build" / "bundle").exists()


@pytest.mark.parametrize("args", [["0.2.0", "--minor"], []])
def test_release_wants_exactly_one_version_choice(repo: Path, args: list[str]) -> None:
    before = state(repo)
    run = release(repo, *args)
    assert run.exit_code == 2
    assert "give a VERSION or one of --major, --minor, --patch" in run.stderr
    assert state(repo) == before


def test_release_signs_with_a_key_file(repo: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "release.key"
    shutil.copy(KEY_FILE, key_file)
    run = release(repo, "1.0.0", "--key", str(key_file))
    assert run.exit_code == 0, run.stderr
    archive = repo / "build" / "release" / "floor-1.0.0.tar.gz"
    assert run_cli("verify", str(archive), "--key", PUBLIC).exit_code == 0
    assert git(repo, "tag", "--list") == "v1.0.0"


@pytest.mark.usefixtures("signing_env")
def test_release_push_sends_the_branch_and_the_tag(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, capture_output=True)
    git(repo, "remote", "add", "origin", str(remote))
    run = release(repo, "--major", "--push")
    assert run.exit_code == 0, run.stderr
    assert run.lines[-1] == "pushed"
    head = git(repo, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "refs/heads/main") == head
    assert git(remote, "cat-file", "-t", "refs/tags/v1.0.0") == "tag"
    assert git(remote, "rev-parse", "refs/tags/v1.0.0^{commit}") == head
    assert git(remote, "rev-parse", "refs/tags/v1.0.0") == git(
        repo, "rev-parse", "refs/tags/v1.0.0"
    )


@pytest.mark.usefixtures("signing_env")
def test_release_of_a_library_in_a_subfolder(tmp_path: Path) -> None:
    root = tmp_path / "monorepo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text("print('hi')\n")
    assert run_cli("init", str(root / "handbook"), "--name", "floor").exit_code == 0
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test Releaser")
    git(root, "config", "user.email", "releaser@example.invalid")
    commit_all(root, "Start")
    run = run_cli("release", "--patch", "--config", str(root / "handbook" / "mkdocs.yml"))
    assert run.exit_code == 0, run.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "handbook/mkdocs.yml"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert (root / "handbook" / "build" / "release" / "floor-0.1.1.tar.gz").is_file()


@pytest.mark.usefixtures("signing_env")
def test_release_changes_nothing_when_the_commit_fails(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'rejected by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(repo)
    run = release(repo, "--minor")
    assert run.exit_code == 1
    assert "rejected by policy" in run.stderr
    assert state(repo) == before


@pytest.mark.usefixtures("signing_env")
def test_release_of_a_flow_style_plugin_entry(repo: Path) -> None:
    config = repo / "mkdocs.yml"
    text = config.read_text()
    block = text[text.index("  - handbook:\n") :]
    config.write_text(
        text.replace(
            block,
            "  - handbook: {library: floor, version: 0.1.0, vocab: {kind: [guide, reference, procedure]}}\n",
        )
    )
    assert load_config(config).version == "0.1.0"
    commit_all(repo, "Flow style")
    before = config.read_text().splitlines()
    run = release(repo, "--minor")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert load_config(config).version == "0.2.0"
    after = config.read_text().splitlines()
    assert [line for line in after if line not in before] == [
        '  - handbook: {library: floor, version: "0.2.0", vocab: {kind: [guide, reference, procedure]}}'
    ]


@pytest.mark.usefixtures("signing_env")
def test_release_push_to_a_missing_remote_changes_nothing(repo: Path) -> None:
    before = state(repo)
    run = release(repo, "--minor", "--push")
    assert run.exit_code == 1
    assert "origin" in run.stderr
    assert state(repo) == before
