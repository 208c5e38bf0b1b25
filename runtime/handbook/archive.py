"""Bundle archives (``.tar.gz``): written deterministically by `handbook pack`, read here.

An archive is only a container: what counts is the bundle inside, which is verified
like any other after unpacking. Unpacking is therefore strict about the container
itself and nothing more: regular files and folders only (no links, devices or
FIFOs), safe relative paths (`manifest.check_path`), no duplicates, and caps on the
member count and the total size, checked from the headers before a byte is written.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import FormatError
from .layout import MANIFEST
from .manifest import check_path

MAX_MEMBERS = 200_000
MAX_TOTAL_BYTES = 4 * 1024**3


def is_archive(path: str | os.PathLike[str]) -> bool:
    name = os.fspath(path)
    return name.endswith((".tar.gz", ".tgz")) and os.path.isfile(name)


def unpack(archive: str | os.PathLike[str], into: Path) -> Path:
    """Extract the bundle in `archive` into the empty folder `into`; returns it."""
    shown = os.fspath(archive)
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            _check(members, shown)
            for member in members:
                target = into / member.name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:  # pragma: no cover - _check allows regular files only
                    raise FormatError(f"{shown}: {member.name} cannot be read")
                with source, open(target, "xb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise FormatError(f"{shown}: {exc.filename} appears twice in the archive") from None
        raise FormatError(f"{shown}: not a readable .tar.gz bundle archive ({exc})") from None
    if not (into / MANIFEST).is_file():
        raise FormatError(f"{shown}: no {MANIFEST} at the top of the archive")
    return into


def _check(members: list[tarfile.TarInfo], shown: str) -> None:
    if len(members) > MAX_MEMBERS:
        raise FormatError(
            f"{shown}: {len(members):,} entries, over the {MAX_MEMBERS:,} a bundle may have"
        )
    total = 0
    seen: set[str] = set()
    files = {m.name.casefold() for m in members if m.isfile()}
    for member in members:
        name = member.name.rstrip("/") if member.isdir() else member.name
        if not (member.isfile() or member.isdir()):
            raise FormatError(
                f"{shown}: {member.name} is a link or special file; bundle archives hold files and folders only"
            )
        problem = check_path(name)
        if problem:
            raise FormatError(f"{shown}: entry {member.name!r} {problem}")
        folded = name.casefold()
        parent = next((p for p in _ancestors(folded) if p in files), None)
        if parent is not None:
            raise FormatError(
                f"{shown}: {member.name} is inside {parent}, which is a file in the same archive"
            )
        if folded in seen:
            raise FormatError(f"{shown}: {member.name} appears twice in the archive")
        seen.add(folded)
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise FormatError(f"{shown}: more than {MAX_TOTAL_BYTES:,} bytes unpacked")


def _ancestors(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@contextmanager
def unpacked(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The bundle folder at `path`, or the bundle in the archive at `path` unpacked
    into a temporary folder for the duration of the block."""
    if not is_archive(path):
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="handbook-bundle-") as tmp:
        yield unpack(path, Path(tmp) / "bundle")
