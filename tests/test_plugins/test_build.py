"""`handbook build` and `handbook verify` end to end: the example builds and verifies,
every way of damaging a bundle is refused with its cause, builds are reproducible, and
publishing never leaves a half-written or mixed bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import KEY, KEY_FILE, PUBLIC, ROOT, VALID_DOC, MakeLibrary, run_cli

from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import Manifest
from handbook.bundle.signing import load_private_key
from handbook.errors import (
    FormatError,
    HashMismatchError,
    MissingFileError,
    SignatureError,
    UnlistedFileError,
)
from handbook_build import load_config
from handbook_build.errors import BuildError
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"


@pytest.fixture(autouse=True)
def _fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY", raising=False)
    monkeypatch.delenv("HANDBOOK_TRUSTED_KEYS", raising=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One signed build of the example library, copied for each test that damages it."""
    out = tmp_path_factory.mktemp("built") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", "1767225600")
        build(load_config(EXAMPLE), out, KEY)
    return out.resolve()


def copy_of(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(built, target)
    return target


def listed_files(bundle: Path) -> list[str]:
    return sorted(Manifest.from_bytes((bundle / "manifest.json").read_bytes()).signed.files)


def test_example_builds_and_verifies(tmp_path: Path) -> None:
    run = run_cli(
        "build", "--config", str(EXAMPLE), "--out", str(tmp_path / "b"), "--key", str(KEY_FILE)
    )
    assert run.exit_code == 0, run.stderr
    assert run.lines[-2].startswith("built plant-floor 1.0.0: 6 docs, 14 files")
    verified = run_cli("verify", str(tmp_path / "b"), "--key", PUBLIC)
    assert verified.exit_code == 0
    assert verified.lines[-1] == "ok"
    assert verified.lines[-2].startswith("signature verified by ")


def test_bundle_holds_what_the_spec_says(built: Path) -> None:
    files = listed_files(built)
    assert {
        "catalog.json",
        "catalog-offsets.bin",
        "ids.bin",
        "index.json.gz",
        "tools.json",
        "llms.txt",
    } <= set(files)
    catalog = json.loads((built / "catalog.json").read_bytes())
    docs = catalog["docs"]
    assert [d["id"] for d in docs] == sorted(d["id"] for d in docs)
    ac200 = next(d for d in docs if d["id"] == "device.acme.ac200")
    assert ac200["url"] == "devices/acme-ac200/"
    assert ac200["source"] == "devices/acme-ac200.md"
    assert ac200["meta"]["vendor"] == "Acme (fictional)"
    content = (built / ac200["content"]).read_bytes()
    for section in ac200["sections"]:
        text = content[section["start"] : section["end"]].decode("utf-8")
        assert text.startswith("#" * section["level"] + " " + section["title"])
        assert len(text) == section["chars"]
    assert catalog["library"]["filters"]["protocol"] == {"docs": 5, "values": ["modbus", "mqtt"]}
    assert catalog["library"]["list_fields"] == ["equipment_type", "protocol"]


def test_llms_txt_groups_links_by_kind(built: Path) -> None:
    text = (built / "llms.txt").read_text()
    assert text.startswith("# Plant floor handbook (example)\n\n> Protocol guides")
    assert "## device\n\n- [Acme AC-200 air compressor (fictional)](devices/acme-ac200/): " in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## device",
        "## guide",
        "## protocol",
    ]


def test_builds_are_byte_identical(tmp_path: Path, built: Path) -> None:
    build(load_config(EXAMPLE), tmp_path / "again", KEY)
    again = (tmp_path / "again").resolve()
    assert again.name == built.name  # the version name is the manifest's hash
    for name in ["manifest.json", *listed_files(built)]:
        assert (again / name).read_bytes() == (built / name).read_bytes(), name


# -- the tamper matrix -----------------------------------------------------------------------


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1])


def _append(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"x")


DAMAGE = {"flip": _flip, "truncate": _truncate, "append": _append, "delete": Path.unlink}


def _damage_cases() -> list[tuple[str, str]]:
    return [
        (name, how)
        for how in DAMAGE
        for name in [
            "manifest.json",
            "catalog.json",
            "catalog-offsets.bin",
            "ids.bin",
            "index.json.gz",
            "tools.json",
            "llms.txt",
            "content/*",
        ]
    ]


@pytest.mark.parametrize(("name", "how"), _damage_cases())
def test_every_damaged_file_is_refused_naming_it(
    built: Path, tmp_path: Path, name: str, how: str
) -> None:
    bundle = copy_of(built, tmp_path)
    targets = sorted(bundle.glob(name))
    assert targets
    for target in targets:  # every content file, one at a time
        fresh = copy_of(built, tmp_path / target.name)
        victim = fresh / target.relative_to(bundle)
        DAMAGE[how](victim)
        with pytest.raises(
            (FormatError, HashMismatchError, MissingFileError, SignatureError)
        ) as info:
            open_bundle(fresh, [PUBLIC])
        if name != "manifest.json":
            assert str(info.value).startswith(str(victim.relative_to(fresh))), info.value
        shutil.rmtree(fresh.parent)


def test_refusals_name_their_cause(built: Path, tmp_path: Path) -> None:
    bundle = copy_of(built, tmp_path)
    content = sorted(bundle.glob("content/*"))[0]
    _append(content)
    with pytest.raises(
        HashMismatchError,
        match=rf"^{content.relative_to(bundle)}: observed .*\+ bytes, the catalog lists",
    ):
        open_bundle(bundle, [PUBLIC])


def test_extra_file_and_folder_are_refused(built: Path, tmp_path: Path) -> None:
    bundle = copy_of(built, tmp_path)
    (bundle / "content" / "extra.md").write_text("not listed")
    with pytest.raises(
        UnlistedFileError, match=r"content/extra\.md: present in the bundle but referred to by no"
    ):
        open_bundle(bundle, [PUBLIC])
    (bundle / "content" / "extra.md").unlink()
    (bundle / "assets").mkdir()
    with pytest.raises(UnlistedFileError, match="assets/: a folder the manifest does not list"):
        open_bundle(bundle, [PUBLIC])


def test_symlinked_file_is_refused(built: Path, tmp_path: Path) -> None:
    bundle = copy_of(built, tmp_path)
    (tmp_path / "llms.txt").write_bytes((bundle / "llms.txt").read_bytes())
    (bundle / "llms.txt").unlink()
    (bundle / "llms.txt").symlink_to(tmp_path / "llms.txt")
    with pytest.raises(
        FormatError,
        match=r"llms\.txt: not a regular file \(a symlink or special file\); symlinks are refused",
    ):
        open_bundle(bundle, [PUBLIC])


def test_untrusted_key_swapped_signature_and_unsigned(built: Path, tmp_path: Path) -> None:
    from handbook.bundle.signing import generate_private_key

    other_pem, other_public = generate_private_key()
    with pytest.raises(SignatureError, match="0 valid signature"):
        open_bundle(built, [str(other_public)])
    bundle = copy_of(built, tmp_path)
    manifest = json.loads((bundle / "manifest.json").read_bytes())
    other = load_private_key(other_pem)
    manifest["signatures"][0]["sig"] = (
        __import__("base64").b64encode(other.sign(b"something else")).decode()
    )
    from handbook.bundle import canonical

    (bundle / "manifest.json").write_bytes(canonical.dumps(manifest))
    with pytest.raises(SignatureError):
        open_bundle(bundle, [PUBLIC])
    manifest["signatures"] = []
    (bundle / "manifest.json").write_bytes(canonical.dumps(manifest))
    with pytest.raises(SignatureError, match="unsigned"):
        open_bundle(bundle, [PUBLIC])
    assert open_bundle(bundle, allow_unsigned=True).signature_state == "unsigned"


def test_verify_command_exit_codes(built: Path, tmp_path: Path) -> None:
    bundle = copy_of(built, tmp_path)
    _flip(bundle / "index.json.gz")
    run = run_cli("verify", str(bundle), "--key", PUBLIC)
    assert run.exit_code == 1
    assert run.stderr.startswith("refused: index.json.gz: observed sha256 ")
    assert run_cli("verify", str(bundle), "--key", "ed25519:not-base64").exit_code == 2
    assert run_cli("verify", str(tmp_path / "nowhere"), "--key", PUBLIC).exit_code == 1


# -- publishing ----------------------------------------------------------------------------------


def test_failed_check_writes_nothing_and_keeps_the_previous_bundle(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config_path = make_library({"a.md": VALID_DOC.format(id="a")})
    out = tmp_path / "out" / "bundle"
    build(load_config(config_path), out, KEY)
    first = out.resolve()
    (config_path.parent / "docs" / "b.md").write_text("broken")
    with pytest.raises(BuildError):
        build(load_config(config_path), out, KEY)
    assert out.resolve() == first
    assert open_bundle(out, [PUBLIC]).manifest.signed.docs == 1
    run = run_cli("build", "--config", str(config_path), "--out", str(out), "--key", str(KEY_FILE))
    assert run.exit_code == 1
    assert (
        run.lines[0]
        == "b.md:1:1: HB201 has no frontmatter; start the file with a `---` line, the fields, and a closing `---`"
    )


def test_publish_swaps_a_symlink_and_cleans_leftovers(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config_path = make_library({"a.md": VALID_DOC.format(id="a")})
    out = tmp_path / "out" / "bundle"
    build(load_config(config_path), out, KEY)
    first = out.resolve()
    leftover = out.parent / "bundle.versions" / ".tmp-killed-build"
    (leftover / "content").mkdir(parents=True)
    (config_path.parent / "docs" / "b.md").write_text(VALID_DOC.format(id="b"))
    build(load_config(config_path), out, KEY)
    second = out.resolve()
    assert out.is_symlink() and second != first
    assert not leftover.exists()
    (config_path.parent / "docs" / "c.md").write_text(VALID_DOC.format(id="c"))
    build(load_config(config_path), out, KEY)
    versions = sorted(p.name for p in (out.parent / "bundle.versions").iterdir())
    assert versions == sorted([second.name, out.resolve().name])  # the new and the previous one


def test_a_plain_directory_bundle_is_adopted_but_other_content_is_not_clobbered(
    make_library: MakeLibrary, tmp_path: Path, built: Path
) -> None:
    config_path = make_library({"a.md": VALID_DOC.format(id="a")})
    out = tmp_path / "bundle"
    shutil.copytree(built, out)
    build(load_config(config_path), out, KEY)
    assert out.is_symlink()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    run = run_cli(
        "build", "--config", str(config_path), "--out", str(precious), "--key", str(KEY_FILE)
    )
    assert run.exit_code == 1
    assert "exists and is not a bundle" in run.stderr
    assert (precious / "notes.txt").read_text() == "keep me"


def test_unsigned_build_warns_and_is_refused_in_ci_or_strict(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_path = make_library({"a.md": VALID_DOC.format(id="a")})
    run = run_cli("build", "--config", str(config_path), "--out", str(tmp_path / "u"))
    assert run.exit_code == 0
    assert run.stderr.startswith("warning: no signing key")
    assert run.lines[-1] == "signature: unsigned"
    assert (
        run_cli(
            "build", "--config", str(config_path), "--out", str(tmp_path / "s"), "--strict"
        ).exit_code
        == 1
    )
    signed = ["build", "--config", str(config_path), "--out", str(tmp_path / "u")]
    assert run_cli(*signed, "--key", str(KEY_FILE)).exit_code == 0
    over = run_cli("build", "--config", str(config_path), "--out", str(tmp_path / "u"))
    assert over.exit_code == 0
    assert "is signed, and this build replaces it with an UNSIGNED one" in over.stderr
    monkeypatch.setenv("CI", "true")
    refused = run_cli("build", "--config", str(config_path), "--out", str(tmp_path / "c"))
    assert refused.exit_code == 1
    assert not (tmp_path / "c").exists()
    monkeypatch.setenv("HANDBOOK_SIGNING_KEY", KEY_FILE.read_text())
    assert (
        run_cli("build", "--config", str(config_path), "--out", str(tmp_path / "c")).exit_code == 0
    )


def test_keygen_writes_a_private_key_once(tmp_path: Path) -> None:
    run = run_cli("keygen", "--out", str(tmp_path / "k.pem"))
    assert run.exit_code == 0
    assert run.stdout.startswith("ed25519:")
    assert (tmp_path / "k.pem").stat().st_mode & 0o777 == 0o600
    again = run_cli("keygen", "--out", str(tmp_path / "k.pem"))
    assert again.exit_code == 2
    assert "refusing to overwrite" in again.stderr


def test_tools_json_is_valid_json_schema(built: Path) -> None:
    import jsonschema

    tools = json.loads((built / "tools.json").read_bytes())["tools"]
    from handbook.tools.table import READ_TOOLS

    assert [t["name"] for t in tools] == [tool.name for tool in READ_TOOLS]
    for tool in tools:
        assert __import__("re").fullmatch(r"[a-z][a-z0-9_]{0,40}", tool["name"])
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        assert "outputSchema" not in tool  # MCP serves them; `handbook tools --output-schemas`
        strict = tool["inputSchema"]
        assert strict["additionalProperties"] is False and set(strict["required"]) == set(
            strict["properties"]
        )
    listing = tools[0]
    assert "kinds: device, protocol, guide" in listing["description"]
    assert listing["inputSchema"]["properties"]["protocol"]["enum"] == [
        "modbus",
        "mqtt",
        "any",
        None,
    ]
