"""`handbook init --adopt`: the configuration that makes an existing site a library.

Nothing of the site changes but its configuration, and that only by an insertion:

- `mkdocs.yml` gains a `- handbook:` entry at the end of its `plugins:` list (or a
  `plugins:` list with MkDocs' default `search` and the entry), every other byte kept, so
  `mkdocs build` writes the bundle beside the site;
- a site whose configuration cannot take a plugin entry (`zensical.yml`,
  `zensical.toml`: Zensical has no plugin system; a `plugins:` in flow style) gets a
  standalone `handbook.yml` naming it with `site:`;
- a folder of Agent Skills gets a `handbook.yml` with `layout: skills`.

The entry adopts the site: the library is named for `site_name`, `adopt.kinds` maps each
top-level folder of the docs to a kind named for it, everything else is a `page`, and
`vocab.kind` lists them. It says `signing: optional` and `strict: false`, with a comment
on opting in: the site's own builds (`mkdocs build --strict`, builds in CI) give the
result they gave before. A workflow that checks every push (without `--strict`: an
adopted site's content is accepted as it stands) and builds, signs and releases the
bundle on a version tag is written into `.github/workflows` at the repository's root
(`repository`), running in the site's folder, unless the repository already builds its
docs in a workflow (`--workflow` writes it beside that one; `--no-workflow` never).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config import site_config
from ..config.options import NAME
from ..errors import ScaffoldError
from ..findings import Finding
from ..read.source import discover
from ..safe_paths import refuse_links, replace_file, write_new
from .repository import WORKFLOWS, Repository, repository_of
from .scaffold import library_name, workflow

WORKFLOW_NAME = "handbook.yml"


@dataclass(frozen=True)
class Adopted:
    written: list[Path]
    """Files created."""
    changed: list[Path]
    """Files the entry was inserted into."""
    notes: list[str]
    """What the user should know (a file left alone, what builds the bundle)."""


def adopt_site(
    folder: Path,
    library: str | None = None,
    install_from: str | None = None,
    workflow: bool | None = None,
) -> Adopted:
    """Write the configuration that adopts the site (or skills folder) in `folder`, and
    the workflow (`workflow`: True writes it beside the repository's own docs workflow,
    False never, None only where the repository builds no docs in a workflow yet)."""
    chosen = site_config.find(folder)
    if not chosen.exists():
        raise ScaffoldError(
            f"{folder}: no site here (no mkdocs.yml, zensical.yml, zensical.toml or SKILL.md); "
            "run `handbook init` to start a new library"
        )
    if not chosen.is_dir() and not isinstance(site_config.read(chosen, str(chosen)), Finding):
        raise ScaffoldError(f"{chosen}: already has a `handbook` entry; nothing to adopt")
    skills = chosen.is_dir()
    docs_dir, site_name = folder, None
    if not skills:
        site = site_config.read(chosen, str(chosen), entry_optional=True)
        if isinstance(site, Finding):
            raise ScaffoldError(str(site))
        docs_dir = chosen.parent / str(site.settings.get("docs_dir", "docs"))
        site_name = site.settings.get("site_name")
    name = library or name_from_title(site_name) or library_name(folder)
    if not NAME.fullmatch(name):
        raise ScaffoldError(
            f"{name!r} is not a library name "
            "(lowercase letters, digits, `_`, `-`, dots between parts); pass --name"
        )
    options = _options(name, docs_dir, skills)

    notes: list[str] = []
    plan: dict[Path, tuple[bytes | None, str]] = {}  # path -> (bytes it had, new text)
    inserted = None if skills or chosen.name != "mkdocs.yml" else _insert_entry(chosen, options)
    if inserted is not None:
        plan[chosen] = (chosen.read_bytes(), inserted)
        notes.append(
            f"`mkdocs build` writes the bundle where the site's own plugins are installed; "
            f"`handbook build --config {chosen.name}` does without them"
        )
    else:
        standalone = {"site": chosen.name} if not skills else {"docs_dir": "."}
        plan[folder / "handbook.yml"] = (None, _standalone(standalone | options, chosen, skills))
        if not skills:
            notes.append(
                f"{chosen.name} is left as it is: Handbook reads its settings through handbook.yml"
            )
    repo = repository_of(folder)
    notes += _plan_workflow(repo, plan, install_from, workflow)
    return Adopted(*_carry_out((folder, repo.root), plan), notes)


def name_from_title(title: object) -> str | None:
    """A library name from the site's `site_name`: `Material for MkDocs` →
    `material-for-mkdocs`, `Über uns` → `uber-uns`; None when no letter or digit is left."""
    if not isinstance(title, str):
        return None
    ascii_only = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "-", ascii_only.lower()).strip("-")
    return name[:64].rstrip("-") or None


def _plan_workflow(
    repo: Repository,
    plan: dict[Path, tuple[bytes | None, str]],
    install_from: str | None,
    wanted: bool | None,
) -> list[str]:
    """Add the workflow to `plan` where it fits the repository; the notes on what was
    done instead. Its install requirement is checked only when it is written."""
    from .install import check_spec, default_spec

    target = repo.workflows / WORKFLOW_NAME
    shown = (WORKFLOWS / WORKFLOW_NAME).as_posix() if repo.site == "." else str(target)
    if wanted is False:
        return ["no workflow written (--no-workflow)"]
    if target.exists() or target.is_symlink():
        return [f"{shown} exists; left as it is"]
    others = [p.name for p in repo.docs_workflows()]
    if others and wanted is None:
        return [
            f"the repository builds its docs in {', '.join(others)}: Handbook's workflow is not "
            "written beside it (--workflow writes it); `handbook check --format github` in a "
            "step of yours reports findings as annotations"
        ]
    spec = check_spec(install_from) if install_from is not None else default_spec()
    plan[target] = (None, workflow(spec, adopted=True, folder=repo.site))
    return [] if repo.site == "." else [f"the workflow runs in {repo.site}/ of {repo.root}"]


def _carry_out(
    bases: tuple[Path, ...], plan: dict[Path, tuple[bytes | None, str]]
) -> tuple[list[Path], list[Path]]:
    """Write `plan` (path -> the bytes it had, None for a new file; its new text), every
    path checked before anything is written; return the files created and changed. Each
    path is written under the first of `bases` (the site's folder, the repository's
    root) that holds it."""
    placed = {path: _base(path, bases) for path in plan}
    for path, (before, _) in plan.items():
        refuse_links(path, placed[path], ScaffoldError)
        if before is None and path.exists():
            raise ScaffoldError(f"{path} already exists; init never overwrites it")
    written, changed = [], []
    for path, (before, text) in plan.items():
        if before is None:
            base = placed[path]
            written.append(write_new(base, str(path.relative_to(base)), text, ScaffoldError))
        else:
            replace_file(path, before, text.encode("utf-8"), ScaffoldError)
            changed.append(path)
    return written, changed


def _base(path: Path, bases: tuple[Path, ...]) -> Path:
    return next(base for base in bases if base == path or base in path.parents)


def _options(library: str, docs_dir: Path, skills: bool) -> dict[str, Any]:
    """The entry: the library, and the kinds its top-level folders give."""
    if skills:
        return {
            "library": library,
            "version": "0.1.0",
            "layout": "skills",
            "adopt": {"default_kind": "skill"},
            "vocab": {"kind": ["skill"]},
        }
    found = discover(docs_dir)
    folders = Counter(p.split("/", 1)[0] for p in found.paths if "/" in p)
    kinds = {f"{top}/**": _kind(top) for top in sorted(folders)}
    vocab = sorted({*kinds.values(), "page"})
    return {
        "library": library,
        "version": "0.1.0",
        "adopt": {"default_kind": "page", "kinds": kinds} if kinds else {"default_kind": "page"},
        "vocab": {"kind": vocab},
        "signing": "optional",
        "strict": False,
    }


def _kind(folder: str) -> str:
    """A folder's name as a vocabulary word: `User Guide` → `user-guide`."""
    return re.sub(r"[^a-z0-9]+", "-", folder.lower()).strip("-") or "page"


class _Dumper(yaml.SafeDumper):
    """Lists on one line (`kind: [guide, page]`), as people write them in mkdocs.yml."""


_Dumper.add_representer(
    list,
    lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True),
)


OPT_IN = (
    "# The site's own builds stay as they were: `signing: required` refuses unsigned builds\n"
    "# under --strict and in CI (set the HANDBOOK_SIGNING_KEY secret first); `strict: true`\n"
    "# makes `mkdocs build --strict` fail on Handbook's warnings about the pages.\n"
)
"""Written above `signing:`, so the user sees what to opt into and how."""


def _dump(options: dict[str, Any], indent: int) -> str:
    text = yaml.dump(options, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
    lines = []
    for line in text.splitlines():
        if line.startswith("signing:"):
            lines += OPT_IN.splitlines()
        lines.append(line)
    return "".join(" " * indent + line + "\n" for line in lines)


def _insert_entry(path: Path, options: dict[str, Any]) -> str | None:
    """mkdocs.yml with the entry appended to its block-style `plugins:` (or a new one), or
    None when the file's `plugins:` is in a form an insertion cannot extend safely."""
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    newline = "\r\n" if "\r\n" in text else "\n"
    text = text.replace("\r\n", "\n")
    root = yaml.compose(text, Loader=yaml.SafeLoader)  # nodes only: no tag is constructed
    plugins = (
        next(
            (v for k, v in root.value if getattr(k, "value", None) == "plugins"),
            None,
        )
        if isinstance(root, yaml.MappingNode)
        else None
    )
    if plugins is None:
        block = "plugins:\n  - search\n  - handbook:\n" + _dump(options, 6)
        new = text.rstrip("\n") + "\n\n" + block
    elif isinstance(plugins, yaml.SequenceNode) and not plugins.flow_style and plugins.value:
        first = plugins.value[0].start_mark
        line = text.splitlines()[first.line]
        dash = line.index("-")
        end = _end_of_content(text, plugins.value[-1].end_mark.index)
        block = " " * dash + "- handbook:\n" + _dump(options, dash + 4)
        new = text[:end] + block + text[end:]
    else:
        return None
    return new.replace("\n", newline)


def _end_of_content(text: str, index: int) -> int:
    """Where the line after the last non-blank character before `index` begins."""
    last = len(text[:index].rstrip())
    newline = text.find("\n", last)
    return len(text) if newline < 0 else newline + 1


def _standalone(options: dict[str, Any], site: Path, skills: bool) -> str:
    what = "this folder of Agent Skills" if skills else f"the site that {site.name} configures"
    head = (
        f"# Handbook's settings for {what}, written by `handbook init --adopt`;\n"
        "# every key is in Handbook's docs: Reference, Configuration.\n"
    )
    return head + _dump(options, 0)
