"""Walking the docs root and reading its files, refusing anything that is not plainly a
regular file inside it.

Symlinks are never followed (a link can point anywhere, and a link to a FIFO hangs a
reader), special files are never opened, and every name must be portable: the same docs
root is checked out on Linux, macOS and Windows, and a bundle's paths must mean one
file everywhere. Dot-files and dot-directories are skipped, as MkDocs does.

Text is decoded as strict UTF-8; a leading byte-order mark is dropped and line endings
become ``\\n``, so a checkout with CRLF endings gives the same bundle.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from handbook.bundle.manifest import check_path

from .. import rules
from ..findings import Finding

_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}
_UNPORTABLE = set('\\<>:"|?*')


FOLDER_DOCS = ("SKILL.md", "index.md")
"""A folder holding one of these is a doc with attached files (resources)."""


@dataclass(frozen=True)
class Discovery:
    """The markdown files found, as POSIX paths relative to the root; the resources of
    folder docs (doc path -> resource paths relative to the root); the findings."""

    paths: list[str]
    findings: list[Finding]
    resources: dict[str, list[str]] = field(default_factory=dict)


def discover(root: Path, exclude: Sequence[str] = (), skills_only: bool = False) -> Discovery:
    """Every doc under `root` and the files attached to folder docs; with `skills_only`,
    only the folders holding a SKILL.md are docs (other markdown is not the library's)."""
    paths: list[str] = []
    others: list[str] = []
    findings: list[Finding] = []
    real_root = os.path.realpath(root)
    for rel, entry in _walk(root, "", exclude):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            target = os.path.realpath(entry.path)
            if os.path.commonpath([real_root, target]) != real_root:
                findings.append(rules.UNSAFE_PATH.at(rel, 1, variant="escape"))
            else:
                findings.append(rules.SYMLINK.at(rel, 1))
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            findings.append(rules.SPECIAL_FILE.at(rel, 1))
        elif stat.S_ISREG(mode):
            problem = unportable(rel)
            if problem:
                findings.append(rules.UNSAFE_PATH.at(rel, 1, variant="unportable", problem=problem))
            else:
                (paths if rel.endswith(".md") else others).append(rel)
    paths.sort()
    findings.extend(_collisions(sorted(paths + others)))
    docs, resources = _folder_docs(paths, others)
    if skills_only:
        docs = [d for d in docs if posixpath.basename(d) == "SKILL.md"]
        resources = {d: files for d, files in resources.items() if d in docs}
    for doc, files in resources.items():
        # an attached file's path in its folder becomes a bundle path: refuse here what the
        # bundle would refuse (check_path: NFC, C1 controls, …), so check and build agree
        folder = posixpath.dirname(doc)
        for rel in list(files):
            problem = check_path(posixpath.relpath(rel, folder))
            if problem:
                findings.append(rules.UNSAFE_PATH.at(rel, 1, variant="attached", problem=problem))
                files.remove(rel)
    return Discovery(docs, findings, resources)


def _folder_docs(paths: list[str], others: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Docs and their resources. A folder with SKILL.md is one doc: every other file
    under it is its resource (as in Agent Skills). A folder (not the root) with
    index.md keeps its markdown files as docs and attaches the other files under it,
    outside nested folder docs, to index.md."""
    owners: dict[str, str] = {}  # folder -> its doc
    for rel in paths:
        folder, _, name = rel.rpartition("/")
        if folder and (
            name == "SKILL.md"
            or (name == "index.md" and owners.get(folder, "").rpartition("/")[2] != "SKILL.md")
        ):
            owners[folder] = rel
    skills = {folder for folder, doc in owners.items() if doc.endswith("/SKILL.md")}

    def owner(rel: str) -> str | None:
        parts = rel.split("/")[:-1]
        for depth in range(len(parts), 0, -1):
            folder = "/".join(parts[:depth])
            if folder in owners:
                return owners[folder]
        return None

    def inside_skill(rel: str) -> bool:
        parts = rel.split("/")[:-1]
        return any("/".join(parts[:d]) in skills for d in range(1, len(parts) + 1))

    owned = set(owners.values())
    docs = [rel for rel in paths if rel in owned or not inside_skill(rel)]
    kept = set(docs)  # sets: a list here made discovering 100,000 docs take 3 minutes
    resources: dict[str, list[str]] = {}
    for rel in sorted([*others, *(p for p in paths if p not in kept)]):
        doc = owner(rel)
        if doc is not None:
            resources.setdefault(doc, []).append(rel)
    return docs, resources


def _walk(
    root: Path, prefix: str, exclude: Sequence[str]
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    with os.scandir(root / prefix if prefix else root) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        rel = f"{prefix}{entry.name}"
        if entry.name.startswith(".") or any(fnmatch.fnmatchcase(rel, p) for p in exclude):
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(root, rel + "/", exclude)
        else:
            yield rel, entry


def unportable(rel: str) -> str | None:
    """Why `rel` is not a safe, portable relative path, or None."""
    for part in rel.split("/"):
        if any(ch in _UNPORTABLE or ord(ch) < 32 or ord(ch) == 127 for ch in part):
            return (
                f"name {part!r} holds a character that is not portable "
                '(\\ < > : " | ? * or a control character)'
            )
        if part.endswith((".", " ")):
            return f"name {part!r} ends with a dot or a space"
        if part.split(".")[0].lower() in _WINDOWS_RESERVED:
            return f"name {part!r} is reserved on Windows"
    return None


def _collisions(paths: list[str]) -> Iterator[Finding]:
    """Files, and the folders on their paths, that are the same name after case folding
    or Unicode normalization (`notes.md` and `NOTES.md/a.md` collide too)."""
    seen: dict[str, str] = {}
    for rel in paths:
        parts = rel.split("/")
        for depth in range(1, len(parts) + 1):
            name = "/".join(parts[:depth])
            key = unicodedata.normalize("NFC", name).casefold()
            if key not in seen:
                seen[key] = name
            elif seen[key] != name:
                yield rules.PATH_COLLISION.at(rel, 1, other=seen[key])
                break


@dataclass(frozen=True)
class Text:
    path: str
    text: str


def read(root: Path, rel: str) -> Text | Finding:
    """The file's text, or the finding that explains why it cannot be used."""
    try:
        fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        rule = rules.SYMLINK if os.path.islink(root / rel) else rules.SPECIAL_FILE
        return rule.at(rel, 1, variant="unopenable", error=exc.strerror)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return rules.SPECIAL_FILE.at(rel, 1, variant="irregular")
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return rules.NOT_UTF8.at(rel, line, col, byte=data[exc.start], offset=exc.start)
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Text(rel, text)
