"""Where a site sits in its repository, for the workflow `init --adopt` writes: GitHub
reads workflows only from `.github/workflows` at the repository's root, so a site in a
subfolder (`webdoc/mkdocs.yml`) needs its workflow there, running in that subfolder; and
a repository that already builds its docs in a workflow keeps it, untouched and alone,
unless the user asks for Handbook's beside it."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

WORKFLOWS = Path(".github/workflows")
_BUILDS_DOCS = re.compile(r"\b(?:mkdocs|zensical|handbook)\b", re.IGNORECASE)
"""What a workflow that builds or checks the docs names in a step."""
_SCRIPT_PATH = re.compile(r"""(?:^|[\s"'=])((?:\./)?[\w.-]+(?:/[\w.-]+)+)""", re.MULTILINE)
"""A relative path with at least one folder in it, as a step names a script."""


@dataclass(frozen=True)
class Repository:
    root: Path
    """The repository's root (the folder itself when it is in no git repository)."""
    site: str
    """The site's folder relative to `root`, POSIX; "." when it is the root."""

    @property
    def workflows(self) -> Path:
        return self.root / WORKFLOWS

    def docs_workflows(self) -> list[Path]:
        """The repository's workflows that build or check docs (name MkDocs, Zensical or
        Handbook), in name order."""
        if not self.workflows.is_dir():
            return []
        found = []
        for path in sorted(self.workflows.iterdir()):
            if path.suffix not in (".yml", ".yaml") or not path.is_file():
                continue
            text = _read(path)
            if _BUILDS_DOCS.search(text) or any(
                _BUILDS_DOCS.search(_read(script)) for script in self._scripts(text)
            ):
                found.append(path)
        return found

    def _scripts(self, workflow: str) -> list[Path]:
        """The repository's files a workflow's steps run by path (`run: scripts/build`,
        `./tools/docs.sh`): many projects build their docs in such a script, and the
        workflow names only the script."""
        named = {m.strip("'\"").removeprefix("./") for m in _SCRIPT_PATH.findall(workflow)}
        root = self.root.resolve()
        out = []
        for name in sorted(named):
            path = (root / name).resolve()
            if root in path.parents and path.is_file():
                out.append(path)
        return out


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return ""


def repository_of(folder: Path) -> Repository:
    """The repository `folder` is in: git's own answer, else the nearest folder above with
    a `.git`, else `folder` (not in a repository: it will be its root)."""
    folder = Path(os.path.abspath(folder))
    root = _git_toplevel(folder) or next(
        (p for p in (folder, *folder.parents) if (p / ".git").exists()), folder
    )
    real_root, real_folder = Path(os.path.realpath(root)), Path(os.path.realpath(folder))
    try:
        site = real_folder.relative_to(real_root).as_posix()
    except ValueError:  # git answered with a root that does not hold the folder
        return Repository(folder, ".")
    return Repository(root, site or ".")


def _git_toplevel(folder: Path) -> Path | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        return None
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else None
