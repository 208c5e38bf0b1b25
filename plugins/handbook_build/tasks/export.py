"""`handbook export skills`: a verified bundle written out as a folder of Agent Skills.

What the files hold is `handbook.skills.export`'s (the same bytes `handbook serve`
answers under ``/.well-known/agent-skills/``); this module only puts them on disk. They
are written into a new temporary folder beside the output, each file created without
following links and never over another, then the folder is moved into place: a failed
export leaves the output as it was. An output that holds anything is replaced only when
asked (`force`), and no symbolic link on the way to it is written through.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from handbook.bundle.local import Bundle
from handbook.skills.export import Skill, skills, tree

from ..errors import PublishError
from ..safe_paths import refuse_links


def export_skills(
    bundle: Bundle, out: Path, kinds: Collection[str] = (), force: bool = False
) -> tuple[dict[str, Skill], int]:
    """Write the docs of `bundle` (or those of `kinds`) as skills into the folder `out`;
    return (the skills by name, how many files were written). Raises `SkillsError` when
    the docs cannot all be skills, `PublishError` when `out` cannot take them."""
    target = Path(os.path.abspath(out))
    cwd = Path.cwd()
    refuse_links(target, cwd if cwd in target.parents else target.parent)
    _check_target(target, force)
    chosen = skills({bundle.manifest.signed.library: bundle}, kinds)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        os.chmod(tmp, 0o755)
        written = 0
        for rel, data in tree(chosen):
            _write_new(tmp / rel, data)
            written += 1
        _move_into_place(tmp, target, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return chosen, written


def _check_target(target: Path, force: bool) -> None:
    if not os.path.lexists(target):
        return
    if target.is_symlink() or not target.is_dir():
        raise PublishError(f"{target} is not a folder; choose another output")
    if not force and any(target.iterdir()):
        raise PublishError(f"{target} is not empty; pass --force to replace what it holds")


def _write_new(path: Path, data: bytes) -> None:
    """Create `path` (in the temporary folder this module made) with `data`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _move_into_place(tmp: Path, target: Path, force: bool) -> None:
    """Rename `tmp` to `target`: over an empty folder at once; over a full one (`force`)
    by moving the old folder aside first and removing it once the new one is in place."""
    _check_target(target, force)  # again: the folder may have changed while writing
    if os.path.lexists(target) and any(target.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.replace(target, old / "out")
        os.replace(tmp, target)
        shutil.rmtree(old)
    else:
        os.replace(tmp, target)
