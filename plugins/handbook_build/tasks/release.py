"""`handbook release`: version, build, sign, pack, commit and tag, in a library's git
repository, or nothing at all.

Every precondition is checked before anything changes: on the release branch, a clean
tree, a version that increases and whose tag does not exist yet, a signing key. Then
the version is written into `mkdocs.yml` (only that line), the bundle is built
strictly and packed; if any of that fails the file is put back as it was. Only then
are the commit and the tag made, and pushed when asked.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.semver import Version
from handbook.bundle.semver import parse as parse_version
from handbook.errors import KeyFormatError

from .. import pipeline
from ..config.keys import signing_key
from ..config.settings import Config, load_config
from ..errors import BuildError, ReleaseError
from ..safe_paths import refuse_links
from .pack import pack


@dataclass(frozen=True)
class Release:
    version: str
    tag: str
    archive: Path
    commit: str
    pushed: bool


def next_version(current: str, part: str) -> str:
    """`current` bumped by `part` (major, minor or patch); a pre-release of the current
    version bumps to its release."""
    version = _version(current, "the current version ")
    major, minor, patch = version.major, version.minor, version.patch
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}" if not version.prerelease else f"{major}.{minor}.{patch}"


def _version(text: str, what: str = "") -> Version:
    """`text` parsed by the rule the readers apply (`handbook.bundle.semver`)."""
    try:
        return parse_version(text)
    except ValueError as exc:
        raise ReleaseError(f"{what}{exc}") from None


def release(
    config_path: Path,
    version: str | None,
    part: str | None,
    *,
    branch: str = "main",
    push: bool = False,
    key_file: str | None = None,
    remote: str = "origin",
) -> Release:
    """Run the release; raise ReleaseError (nothing changed) when it cannot."""
    config = load_config(config_path)
    repo = _repository(config.config_path, branch)
    new = version or next_version(config.version, part or "patch")
    tag = _new_tag(repo, new, config.version)
    key = _release_key(config, key_file)
    if push:
        _git(repo, "remote", "get-url", remote)  # a missing remote is found before anything changes
    archive = _commit_and_tag(repo, config, new, tag, key)
    commit = _git(repo, "rev-parse", "HEAD").strip()
    if push:
        try:
            _git(repo, "push", remote, branch, tag, "--quiet")
        except ReleaseError as exc:
            raise ReleaseError(
                f"released {tag} locally (commit {commit[:12]}), but the push failed: {exc}; "
                f"push it with: git push {remote} {branch} {tag}"
            ) from None
    return Release(new, tag, archive, commit, push)


def _repository(config_path: Path, branch: str) -> Path:
    """The git repository of `config_path` (a YAML file), or ReleaseError unless it is on
    `branch` with a clean tree."""
    if config_path.suffix not in (".yml", ".yaml") or not config_path.is_file():
        raise ReleaseError(
            f"{config_path}: release writes the version into a YAML configuration; "
            "put the handbook entry in handbook.yml (`handbook init --adopt` writes one)"
        )
    repo = Path(_git(config_path.resolve().parent, "rev-parse", "--show-toplevel").strip())
    current_branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if current_branch != branch:
        raise ReleaseError(
            f"on branch {current_branch!r}; releases are made from {branch!r} "
            f"(git switch {branch}, or pass --branch)"
        )
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=normal").strip()
    if dirty:
        raise ReleaseError(
            f"the working tree has uncommitted changes:\n{dirty}\ncommit or stash them first"
        )
    return repo


def _new_tag(repo: Path, new: str, current_text: str) -> str:
    """The tag of version `new`, or ReleaseError unless `new` comes after the current
    version and is not tagged yet."""
    wanted, current = _version(new), _version(current_text, "the current version ")
    if wanted <= current:
        note = " (build metadata makes no new version)" if wanted == current else ""
        raise ReleaseError(f"{new} does not come after the current version {current_text}{note}")
    tag = f"v{new}"
    if _git(repo, "tag", "--list", tag).strip():
        raise ReleaseError(f"tag {tag} already exists; choose another version")
    return tag


def _release_key(config: Config, key_file: str | None) -> Ed25519PrivateKey:
    """The signing key: a release is never unsigned."""
    try:
        key = signing_key(config, key_file).key
    except KeyFormatError as exc:
        raise ReleaseError(str(exc)) from None
    if key is None:
        raise ReleaseError(
            "no signing key: pass --key KEYFILE, set HANDBOOK_SIGNING_KEY or handbook.signing_key"
        )
    return key


def _commit_and_tag(repo: Path, config: Config, new: str, tag: str, key: Ed25519PrivateKey) -> Path:
    """Write version `new` into the configuration, build and pack the bundle, commit and
    tag; return the archive. On any failure everything is put back as it was."""
    config_path = config.config_path
    refuse_links(config_path, repo, ReleaseError)  # mkdocs.yml is rewritten in place
    original = config_path.read_bytes()
    start = _git(repo, "rev-parse", "HEAD").strip()
    relative = str(config_path.resolve().relative_to(repo))
    try:
        config_path.write_bytes(set_version(original, new, config_path))
        archive = _build_and_pack(load_config(config_path), new, key)
        _git(repo, "add", relative)
        _git(repo, "commit", "-m", f"Release {config.library} {new}", "--quiet")
        _git(repo, "tag", "-a", tag, "-m", f"{config.library} {new}")
    except BaseException:
        _undo(repo, start, tag, relative, config_path, original)
        raise
    return archive


def _undo(
    repo: Path, start: str, tag: str, relative: str, config_path: Path, original: bytes
) -> None:
    """Back to where the release started: no tag, HEAD at `start`, mkdocs.yml as it was."""
    for args in (
        ("tag", "-d", tag),
        ("reset", "--quiet", start),
        ("reset", "--quiet", "--", relative),
    ):
        with contextlib.suppress(ReleaseError):  # the step had not happened
            _git(repo, *args)
    config_path.write_bytes(original)


def _build_and_pack(config: Config, version: str, key: Ed25519PrivateKey) -> Path:
    out = config.bundle_dir or config.config_path.parent / "build" / "bundle"
    try:
        built = pipeline.build(config, out, key, strict=True)
    except BuildError as exc:
        found = "\n".join(str(f) for f in exc.findings)
        raise ReleaseError(f"the strict build failed; nothing was committed:\n{found}") from None
    archive = config.config_path.parent / "build" / "release" / f"{config.library}-{version}.tar.gz"
    refuse_links(archive, config.config_path.parent, ReleaseError)
    archive.parent.mkdir(parents=True, exist_ok=True)
    pack(built.bundle.path, archive)
    return archive


def set_version(text: bytes, version: str, path: Path) -> bytes:
    """The YAML configuration with the handbook entry's version replaced on its own
    line; every other byte stays (comments, order, quoting of the rest)."""
    node = _version_node(text, path)
    source = text.decode("utf-8")
    start, end = (
        node.start_mark.index,
        node.end_mark.index,
    )  # the value's exact span, block or flow style
    return (source[:start] + f'"{version}"' + source[end:]).encode("utf-8")


def _version_node(text: bytes, path: Path) -> yaml.Node:
    """The value node of the handbook entry's `version:`: under `plugins:`, under a
    top-level `handbook:`, or at the top of a standalone handbook.yml."""
    root = yaml.compose(
        text.decode("utf-8"), Loader=yaml.SafeLoader
    )  # nodes only: MkDocs' tags need no constructor
    entries: list[yaml.Node] = [root] if root is not None and path.name == "handbook.yml" else []
    for key, value in root.value if isinstance(root, yaml.MappingNode) else ():
        if key.value == "handbook":
            entries.append(value)
        if key.value == "plugins":
            for entry in value.value if isinstance(value, yaml.SequenceNode) else [value]:
                pairs = entry.value if isinstance(entry, yaml.MappingNode) else []
                entries += [options for name, options in pairs if name.value == "handbook"]
    for options in entries:
        for option, option_value in options.value if isinstance(options, yaml.MappingNode) else ():
            if option.value == "version" and isinstance(option_value, yaml.ScalarNode):
                return option_value
    raise ReleaseError(f"{path}: no handbook.version to update")


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise ReleaseError("git is not installed") from None
    if done.returncode != 0:
        raise ReleaseError(
            f"git {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout
