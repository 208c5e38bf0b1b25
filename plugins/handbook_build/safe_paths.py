"""Writing only where a command means to: never through a symbolic link planted on the way.

A docs repository is written by many people, and git keeps symlinks: a `build`, `docs`
or `reviews` link in a clone, or a link named like a temporary file, could send a
command's write into the user's home or system folders. So every file a command writes
into the project tree (`init`, `adopt --write`, `review`, `invalidate`, `inbox accept`
and its undo) goes through `write_file`: from the folder the user or the configuration
chose, downwards, each folder is opened (or made) without following a link, and the data
goes to a new, exclusively created file beside the target that then takes its name.
`build`, `release` and `export` check the paths they publish to (`refuse_links`,
`check_output`), and the published bundle link may only point into its own versions folder.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
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


def _link_refusal(link: Path, target: str) -> str:
    return (
        f"{link} is a symbolic link (to {target}); refusing to write through it. "
        "Remove the link, or choose another output"
    )


def refuse_links(path: Path, below: Path, error: type[HandbookBuildError] = PublishError) -> None:
    link = link_on_the_way(path, below)
    if link is not None:
        raise error(_link_refusal(link, os.readlink(link)))


def checked_from(folder: Path, project: Path) -> Path:
    """Where the components of a path into `folder` are checked from: the project folder
    when `folder` is in it (so a `reviews` or `docs` link committed there is seen), else
    `folder` itself, which the configuration named."""
    folder, project = Path(os.path.abspath(folder)), Path(os.path.abspath(project))
    return project if folder == project or project in folder.parents else folder


def write_file(
    path: Path,
    data: bytes,
    below: Path,
    error: type[HandbookBuildError],
    *,
    before: bytes | None = None,
) -> Path:
    """Write `data` at `path`, reached from the folder `below` (which the user or the
    configuration named) one component at a time, each folder opened (or made) without
    following a link. With `before`, the
    file must still hold exactly those bytes (its permissions are kept); without, it must
    not exist. The data goes to a new, exclusively created file in the same folder first,
    then takes the name in one step (a rename, or a hard link that fails if the name was
    taken meanwhile): a crash leaves the old file or the new one, never half of either,
    and no link planted anywhere on the path (the file's name, its folders, a temporary
    name) is ever written through."""
    folder, name = _open_folder(path, below, error)
    temporary = f".{name}.{secrets.token_hex(8)}.handbook-tmp"
    try:
        mode = None if before is None else _holding(folder, name, path, before, error)
        fd = os.open(temporary, _NEW_FILE, 0o644, dir_fd=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        if mode is None:
            _link_new(folder, temporary, name, path, error)
        else:
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=folder)
        os.close(folder)
    return path


def remove_file(path: Path, before: bytes, below: Path, error: type[HandbookBuildError]) -> None:
    """Remove the file at `path` (reached as `write_file` reaches it) if it still holds
    `before`: the undo of a `write_file` that made it."""
    folder, name = _open_folder(path, below, error)
    try:
        _holding(folder, name, path, before, error)
        os.unlink(name, dir_fd=folder)
    finally:
        os.close(folder)


def write_new(root: Path, rel: str, text: str, error: type[HandbookBuildError]) -> Path:
    """Create `root/rel` with `text`; folders on the way are made, none may be a link,
    and an existing file (or a link in its place) is never replaced."""
    return write_file(root / rel, text.encode("utf-8"), root, error)


def replace_file(path: Path, before: bytes, data: bytes, error: type[HandbookBuildError]) -> None:
    """Write `data` over the file at `path` if it still holds `before` (`write_file`)."""
    write_file(path, data, path.parent, error, before=before)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _open_folder(path: Path, below: Path, error: type[HandbookBuildError]) -> tuple[int, str]:
    """A descriptor of the folder `path` is in, and its name there: each component under
    `below` opened relative to the one before (made when missing), never through a link."""
    path, below = Path(os.path.abspath(path)), Path(os.path.abspath(below))
    try:
        parts = path.relative_to(below).parts
    except ValueError:
        parts = ()
    if not parts:
        raise error(f"{path} is not inside {below}; refusing to write it")
    below.mkdir(parents=True, exist_ok=True)  # named by the user or the configuration
    folder = os.open(below, os.O_RDONLY | os.O_DIRECTORY)
    current = below
    for part in parts[:-1]:
        current = current / part
        folder = _enter(folder, part, current, error)
    return folder, parts[-1]


def _enter(folder: int, name: str, shown: Path, error: type[HandbookBuildError]) -> int:
    """The folder `name` in `folder` (made when missing), opened without following a
    link; `folder` is closed either way."""
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=folder)
        try:
            return os.open(name, _FOLDER, dir_fd=folder)
        except OSError:
            _refuse_link(folder, name, shown, error)
            raise error(f"{shown} is not a folder; refusing to write into it") from None
    finally:
        os.close(folder)


def _holding(
    folder: int, name: str, shown: Path, before: bytes, error: type[HandbookBuildError]
) -> int:
    """The permissions of the regular file `name` in `folder`, which must hold `before`."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        _refuse_link(folder, name, shown, error)
        raise error(f"{shown} is gone or cannot be read; nothing written to it") from None
    with os.fdopen(fd, "rb") as fh:
        status = os.fstat(fh.fileno())
        if not stat.S_ISREG(status.st_mode) or fh.read() != before:
            raise error(f"{shown} changed since it was read; nothing written to it, run again")
    return stat.S_IMODE(status.st_mode)


def _link_new(
    folder: int, temporary: str, name: str, shown: Path, error: type[HandbookBuildError]
) -> None:
    """Give the finished temporary file the name `name`, which must still be free."""
    try:
        os.link(temporary, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        _refuse_link(folder, name, shown, error)
        raise error(f"{shown} exists; refusing to replace it") from None


def _refuse_link(folder: int, name: str, shown: Path, error: type[HandbookBuildError]) -> None:
    """Raise `error` naming the link when `name` in `folder` is a symbolic link."""
    try:
        if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
            raise error(_link_refusal(shown, os.readlink(name, dir_fd=folder)))
    except FileNotFoundError:
        return


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
