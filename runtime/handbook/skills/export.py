"""Verified bundles as Agent Skills: one skill per doc, and the well-known discovery index.

`handbook export skills` writes these files to a folder and `handbook serve` answers them
under ``/.well-known/agent-skills/``; both take them from here, so what is exported and
what is served are the same bytes (but for where the index says the skill folders are).

**Names.** A skill's name (the Agent Skills grammar: ``a-z``, ``0-9`` and single inner
hyphens, at most 64 characters; it is also the skill's folder) is made from the doc id:
every run of characters other than ``a-z`` and ``0-9`` (the id's dots, underscores and
hyphens) becomes one hyphen, so ``device.acme.ac200`` is ``device-acme-ac200``. A doc in
a language other than the library's `default_lang` adds ``-<lang>`` (``-pt-br``). A name
longer than 64 characters keeps its first 55 and ends in ``-`` and the first 8 hex digits
of the sha256 of the id (and language). Several libraries served at once prefix their
library's name. The id is always kept in the skill's metadata (``handbook-id``), so no
name is ever parsed back. Two docs with one name are refused (`SkillsError`), never
renamed: a name must not depend on which other docs exist.

**Artifacts.** A doc without attached files is one ``SKILL.md`` (``"type": "skill-md"``);
a folder doc's skill is also a deterministic ``<name>.tar.gz`` of the ``SKILL.md`` and
its files (``"type": "archive"``), so a client that installs from the index gets them
all, each covered by the digest. Attached files are read from the verified bundle only;
their paths were checked by the verifier and are checked again here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import threading
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..bundle.catalog import DocEntry
from ..bundle.local import Bundle
from ..bundle.manifest import check_path, utc_seconds
from ..errors import SkillsError
from .skill_md import description, description_problem, skill_md

SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
"""The `$schema` of the discovery index (Agent Skills discovery 0.2.0)."""
WELL_KNOWN = ".well-known/agent-skills"
INDEX = "index.json"
SKILL_FILE = "SKILL.md"
MAX_NAME = 64
SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""The Agent Skills name grammar (with the length limit, `MAX_NAME`)."""
_OTHER = re.compile(r"[^a-z0-9]+")


class Artifact(NamedTuple):
    """What the discovery index names for a skill: its SKILL.md (``skill-md``, the path
    below the skill folders), or a folder doc's archive (``archive``, the path beside the
    index)."""

    type: str
    path: str
    data: bytes


class Skill(NamedTuple):
    """One doc as a skill: its name, the doc, and the verified bundle that holds it."""

    name: str
    doc: DocEntry
    bundle: Bundle

    def skill_md(self) -> bytes:
        return skill_md(self.doc, self.name, self.bundle.read(self.doc.content))

    def files(self) -> list[tuple[str, bytes]]:
        """(path in the skill folder, bytes): the SKILL.md, then the attached files."""
        out = [(SKILL_FILE, self.skill_md())]
        out += [(r.path, self.bundle.read(r.file, keep=False)) for r in self.doc.resources]
        return out

    def artifact(self, files: list[tuple[str, bytes]]) -> Artifact:
        """The skill's artifact, made from its `files`."""
        if not self.doc.resources:
            return Artifact("skill-md", f"{self.name}/{SKILL_FILE}", files[0][1])
        mtime = utc_seconds(self.bundle.manifest.signed.built_at) or 0
        return Artifact("archive", f"{self.name}.tar.gz", _archive(files, mtime))

    def entry(self, artifact: Artifact, folders: str) -> dict[str, str]:
        """The skill's entry in the discovery index; `folders` is the path from the
        index's folder to the skill folders."""
        return {
            "name": self.name,
            "type": artifact.type,
            "description": description(self.doc),
            "url": artifact.path if artifact.type == "archive" else folders + artifact.path,
            "digest": "sha256:" + hashlib.sha256(artifact.data).hexdigest(),
            "version": self.bundle.manifest.signed.version,
        }


def _archive(files: list[tuple[str, bytes]], mtime: int) -> bytes:
    """`files` as a .tar.gz in their order, every time `mtime`, owners 0 without names,
    mode 0644, and a gzip header without a name or time: the same files, the same bytes."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path, data in files:
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def skill_name(doc_id: str, lang: str | None = None) -> str:
    """The skill name of a doc id (and language), by the rule in this module's docstring."""
    name = _OTHER.sub("-", f"{doc_id} {lang}".lower() if lang else doc_id.lower()).strip("-")
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(f"{doc_id}@{lang or ''}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"
    return name


def is_skill_name(name: str) -> bool:
    return len(name) <= MAX_NAME and SKILL_NAME.fullmatch(name) is not None


def skills(bundles: Mapping[str, Bundle], kinds: Collection[str] = ()) -> dict[str, Skill]:
    """Every doc of `bundles` (by library name), or those of `kinds`, as a skill, by name
    in name order. Raises `SkillsError` naming every doc that cannot be one."""
    out: dict[str, Skill] = {}
    problems: list[str] = []
    for library, bundle in bundles.items():
        default_lang = bundle.catalog.library.default_lang
        for doc in bundle.catalog.docs:
            if kinds and doc.kind not in kinds:
                continue
            lang = doc.meta.get("lang")
            lang = lang if isinstance(lang, str) and lang != default_lang else None
            name = skill_name(f"{library}.{doc.id}" if len(bundles) > 1 else doc.id, lang)
            if not is_skill_name(name):
                problems.append(f"doc id {doc.id!r} gives no valid skill name ({name!r})")
            elif name in out:
                other = out[name].doc.id
                problems.append(
                    f"docs {other!r} and {doc.id!r} both map to the skill name {name!r}"
                )
            else:
                out[name] = Skill(name, doc, bundle)
            problems += [p for p in (description_problem(doc), *_path_problems(doc)) if p]
    if problems:
        raise SkillsError("cannot be written as Agent Skills: " + "; ".join(problems))
    return dict(sorted(out.items()))


def _path_problems(doc: DocEntry) -> list[str]:
    """Why attached files cannot be written into the doc's skill folder (or its archive):
    an unsafe path, one that would replace its SKILL.md, or one that names the same file
    or folder as another on a disk that ignores case."""
    keys = [SKILL_FILE.casefold(), *(r.path.casefold() for r in doc.resources)]
    counts = Counter(keys)
    folders = {folder for key in keys for folder in _folders(key)}
    problems = []
    for resource, key in zip(doc.resources, keys[1:], strict=True):
        problem = check_path(resource.path)
        if problem is None and key == keys[0]:
            problem = "would replace its SKILL.md"
        elif problem is None and counts[key] > 1:
            problem = "differs from another attached file only by case"
        elif problem is None and (key in folders or counts.keys() & _folders(key)):
            problem = "is a file and a folder at once"
        if problem:
            problems.append(f"doc {doc.id!r} attaches {resource.path!r}, which {problem}")
    return problems


def _folders(path: str) -> set[str]:
    """The folders `path` is in: ``a/b/c`` is in ``a`` and ``a/b``."""
    parts = path.split("/")
    return {"/".join(parts[:n]) for n in range(1, len(parts))}


def tree(chosen: Mapping[str, Skill]) -> Iterator[tuple[str, bytes]]:
    """Every file of the export, by its path in the export folder: each skill's folder
    at the top, the archives and the index in ``.well-known/agent-skills/``."""
    entries = []
    for skill in chosen.values():
        files = skill.files()
        yield from ((f"{skill.name}/{path}", data) for path, data in files)
        artifact = skill.artifact(files)
        if artifact.type == "archive":
            yield f"{WELL_KNOWN}/{artifact.path}", artifact.data
        entries.append(skill.entry(artifact, "../../"))
    yield f"{WELL_KNOWN}/{INDEX}", index(entries)


def index(entries: list[dict[str, str]]) -> bytes:
    """The discovery index of these entries (made by `Skill.entry`, in name order)."""
    document: dict[str, Any] = {"$schema": SCHEMA, "skills": entries}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


INERT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/csv",
        "application/json",
        "application/yaml",
        "application/toml",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    }
)
"""Media types an attached file is served as: a browser shows them, never runs them. Other
text is served as text/plain, anything else as application/octet-stream (an attached
`.html` or `.svg` must not run its scripts in the server's origin)."""


class Published:
    """The skills of what a server serves, under ``/.well-known/agent-skills/``, made from
    the verified bundles in memory. Each served set of bundles (one per audience) has its
    skills and index made once, kept by the bundles' signed identities, and made again
    only once a reload swaps one of its bundles: requests of audiences in turn share
    them instead of each remaking the other's. Making them reads every doc, so `file`
    is called off the event loop (`handbook.serve.http`); the lock keeps two threads from
    making the same thing twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[tuple[tuple[str, str], ...], _Made] = {}

    def file(self, bundles: Mapping[str, Bundle], path: str) -> tuple[bytes, str] | None:
        """(bytes, media type) of `path` below ``/.well-known/agent-skills/``, or None.
        Raises `SkillsError` when the docs cannot be skills, `BundleError` when a file
        changed on disk since its bundle was opened."""
        made = self._of(bundles)
        if path == INDEX:
            return self._index(made), "application/json"
        name, _, rest = path.partition("/")
        archived = made.skills.get(name.removesuffix(".tar.gz"))
        if not rest and name.endswith(".tar.gz") and archived and archived.doc.resources:
            return archived.artifact(archived.files()).data, "application/gzip"
        skill = made.skills.get(name)
        if skill is None:
            return None
        if rest == SKILL_FILE:
            return skill.skill_md(), "text/markdown; charset=utf-8"
        resource = next((r for r in skill.doc.resources if r.path == rest), None)
        if resource is None:
            return None
        kind = resource.media_type
        if kind not in INERT_TYPES:
            kind = "text/plain" if kind.startswith("text/") else "application/octet-stream"
        return skill.bundle.read(resource.file, keep=False), kind

    def _of(self, bundles: Mapping[str, Bundle]) -> _Made:
        """The skills of `bundles`: those made before, unless a bundle was swapped since
        (bundles compare by identity). One entry per served set, so as many as audiences;
        docs that cannot be skills are refused again without being looked at again."""
        served = tuple(bundles.items())
        key = tuple((name, bundle.manifest.signed.identity) for name, bundle in served)
        with self._lock:
            made = self._made.get(key)
            if made is None or made.bundles != served:
                try:
                    made = _Made(served, skills(bundles))
                except SkillsError as exc:
                    made = _Made(served, {}, problem=exc)
                self._made[key] = made
        if made.problem is not None:
            raise made.problem
        return made

    def _index(self, made: _Made) -> bytes:
        """The discovery index, made at its first request (it reads every skill's files)."""
        with made.lock:
            if made.index is None:
                made.index = index([_served_entry(s) for s in made.skills.values()])
            return made.index


@dataclass
class _Made:
    """What was made of one served set of bundles."""

    bundles: tuple[tuple[str, Bundle], ...]
    skills: dict[str, Skill]
    problem: SkillsError | None = None
    """Why these docs cannot be skills (raised at every request, made once)."""
    index: bytes | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def _served_entry(skill: Skill) -> dict[str, str]:
    return skill.entry(skill.artifact(skill.files()), "")
