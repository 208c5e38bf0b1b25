"""Writing only where a command means to: never through a symbolic link planted on the way.

A docs repository is written by many people, and git keeps symlinks: a `build` or
`docs` link in a clone could send `handbook build`, `init` or `release` to write into
the user's home or system folders. Every path these commands write to is therefore
checked, from the folder the user chose (the project folder, or the named output)
downwards: no component may be a symlink, files are created without following links,
and the published bundle link may only point into its own versions folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import HandbookBuildError, PublishError


def link_on_the_way(path: Path, below: Path) -> Path | None:
    """The first existing component of `path` under `below` (not `below` itself, which
    the user named) that is a symbolic link, or None."""
    path, below = Path(os.path.abspath(path)), Path(os.path.abspath(below))
    try:
        parts = path.relative_to(below).parts
    except ValueError:
        return None
    current = below
    for part in parts:
        current = current / part
        if current.is_symlink():
            return current
        if not current.exists():
            return None
    return None


def refuse_links(path: Path, below: Path, error: type[HandbookBuildError] = PublishError) -> None:
    link = link_on_the_way(path, below)
    if link is not None:
        raise error(
            f"{link} is a symbolic link (to {os.readlink(link)}); refusing to write through it. "
            "Remove the link, or choose another output"
        )


def write_new(root: Path, rel: str, text: str, error: type[HandbookBuildError]) -> Path:
    """Create `root/rel` with `text`; folders on the way are made, none may be a link,
    and an existing file (or a link in its place) is never replaced."""
    path = root / rel
    refuse_links(path, root, error)
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_links(path, root, error)  # a link that appeared while the folders were made
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def replace_file(path: Path, before: bytes, data: bytes, error: type[HandbookBuildError]) -> None:
    """Write `data` over the file at `path` if it still holds `before`: through a new file
    and a rename, so a crash leaves the old or the new, never half of one; never through
    a link, and with the file's permissions kept."""
    if path.is_symlink():
        raise error(f"{path} is a symbolic link; refusing to write through it")
    if path.read_bytes() != before:
        raise error(f"{path} changed since it was read; nothing written to it, run again")
    temporary = path.with_name(f".{path.name}.handbook-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def check_output(out: Path, project: Path, versions: Path) -> None:
    """Before a build publishes `out`: no link on the way from the project folder (or,
    for an output outside it, from the output's own folder), the versions folder not a
    link, and `out` itself either absent, a plain folder, or a link into `versions`."""
    out = Path(os.path.abspath(out))
    base = Path(os.path.abspath(project))
    refuse_links(out.parent, base if base in out.parents else out.parent)
    refuse_links(versions, out.parent)
    if out.is_symlink():
        target = Path(os.path.realpath(out))
        if Path(os.path.realpath(versions)) not in target.parents:
            raise PublishError(
                f"{out} is a symbolic link to {os.readlink(out)}, not to a version in {versions}; "
                "refusing to replace it. Remove it, or choose another --out"
            )
