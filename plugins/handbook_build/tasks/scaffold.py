"""`handbook init`: a new library that passes its own check at once.

It writes four things and overwrites nothing: `mkdocs.yml` with the plugin configured,
an example doc that follows the authoring rules, a `.gitignore` that keeps build output
and keys out of git, and a GitHub workflow that checks every push and pull request and,
on a version tag, builds strictly, signs, packs, attaches the archive to a release and
deploys the site to Pages. The workflow installs Handbook with the pip requirement that
`install` validates or derives.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..config.options import NAME
from ..errors import ScaffoldError
from ..safe_paths import refuse_links, write_new
from .install import check_spec, default_spec


@dataclass(frozen=True)
class NewLibrary:
    files: list[Path]
    """Every file written, in the order written."""
    install_from: str
    """The pip requirement the workflow installs Handbook with."""


def library_name(folder: Path) -> str:
    """A library name from a folder name: lowercase, words joined by `-`."""
    name = re.sub(r"[^a-z0-9_.-]+", "-", folder.resolve().name.lower()).strip("-._")
    return name or "library"


def files(library: str, title: str, install_from: str) -> dict[str, str]:
    """Relative path -> text of every file `init` writes; `install_from` is the pip
    requirement the workflow installs Handbook with, already checked."""
    return {
        "mkdocs.yml": MKDOCS.format(
            library=library, title=json.dumps(title)
        ),  # a JSON string is a YAML string
        "docs/index.md": INDEX.format(library=library, title=json.dumps(title), heading=title),
        "docs/guides/writing-docs.md": GUIDE.format(library=library),
        ".gitignore": GITIGNORE,
        ".github/workflows/handbook.yml": workflow(install_from),
    }


def init(
    folder: Path,
    library: str | None = None,
    title: str | None = None,
    install_from: str | None = None,
) -> NewLibrary:
    """Write a new library into `folder` (created if needed). Without `install_from`, the
    workflow installs the commit this Handbook runs from."""
    name = library or library_name(folder)
    if not NAME.fullmatch(name):
        raise ScaffoldError(
            f"{name!r} is not a library name "
            "(lowercase letters, digits, `_`, `-`, dots between parts); pass --name"
        )
    spec = check_spec(install_from) if install_from is not None else default_spec()
    planned = files(name, title or name.replace("-", " ").replace("_", " ").capitalize(), spec)
    existing = [rel for rel in planned if (folder / rel).exists()]
    if existing:
        raise ScaffoldError(
            f"{folder}: {', '.join(existing)} already exist(s); "
            "init never overwrites, choose an empty folder"
        )
    for rel in planned:  # before anything is written: all or nothing
        refuse_links(folder / rel, folder, ScaffoldError)
    written = [write_new(folder, rel, text, ScaffoldError) for rel, text in planned.items()]
    return NewLibrary(written, spec)


MKDOCS = """\
site_name: {title}
site_description: Knowledge for people and AI agents, built with Handbook.
docs_dir: docs
site_dir: build/site
theme:
  name: material
  features:
    - content.code.copy
  palette:
    - media: "(prefers-color-scheme: light)"
      scheme: default
      toggle:
        icon: material/weather-night
        name: Dark mode
    - media: "(prefers-color-scheme: dark)"
      scheme: slate
      toggle:
        icon: material/weather-sunny
        name: Light mode
markdown_extensions:
  - admonition
  - tables
  - toc:
      permalink: true
plugins:
  - search
  - handbook:
      library: {library}
      version: 0.1.0
      vocab:
        kind: [guide, reference, procedure]
"""

INDEX = """\
---
id: {library}.overview
title: {title}
kind: guide
summary: What this library covers, who maintains it and how far its docs can be trusted.
keywords: [overview, start here]
verified: unverified
---
# {heading}

This library collects distilled knowledge for people and AI agents. Replace this page
with what your library covers and who maintains it.

## How docs are organised

Each doc is one markdown file with YAML frontmatter (`id`, `title`, `kind`,
`summary`) and `## ` sections that an agent can read one at a time. See
[Writing docs](guides/writing-docs.md).

## How far to trust a doc

Every doc says `verified: verified`, `field_tested` or `unverified`. Agents repeat
the caveat of an unverified doc.
"""

GUIDE = """\
---
id: {library}.guide.writing-docs
title: Writing docs
kind: guide
summary: How to add a doc to this library so that it passes the check and reads well for agents.
keywords: [authoring, frontmatter, sections, check]
verified: unverified
---
# Writing docs

## Start from the frontmatter

Give every doc a stable `id` (lowercase words and dots), a `title`, a `kind` from the
vocabulary in `mkdocs.yml` and a one-sentence `summary` of at most 250 characters.
Add `keywords` and `aliases` for the words people and agents will search for.

## One topic per section

Agents fetch one `## ` section at a time, so each section should stand on its own:
name the device, the setting or the step it is about.

## Check before you push

```sh
handbook check --strict
mkdocs serve
```
"""

GITIGNORE = """\
# Handbook build output
build/
site/
*.tar.gz
# signing keys never go into git
*.key
*.pem
.venv/
__pycache__/
"""


def workflow(install_from: str, adopted: bool = False, folder: str = ".") -> str:
    """The GitHub workflow. A new library is checked with `--strict` and released with
    `mkdocs build` (site and bundle), the site deployed to Pages; an adopted site's
    content is accepted as it stands (warnings annotate, errors fail), and its release
    builds the bundle alone: the site keeps whatever publishes it today, and the release
    refuses to go without the signing secret. `folder` is the site's folder in the
    repository: every step runs there."""
    parts = _ADOPTED if adopted else _NEW
    text = WORKFLOW.replace("{install_from}", json.dumps(install_from))
    defaults = "" if folder == "." else _DEFAULTS.format(folder=json.dumps(folder))
    text = text.replace("{defaults}", defaults)
    for marker, value in parts.items():
        text = text.replace("{" + marker + "}", value)
    return text


WORKFLOW = """\
# Checks every push and pull request; on a version tag (v1.2.3) builds{strictly}, signs
# with the HANDBOOK_SIGNING_KEY secret, packs the bundle and attaches it to a GitHub
# release{and_pages}. HANDBOOK is the pip requirement that
# installs Handbook (handbook init --install-from): keep it pinned to a commit, tag or
# version, so every run checks with the same Handbook.
name: handbook

on:
  push:
  pull_request:

permissions:
  contents: read

env:
  HANDBOOK: {install_from}
{defaults}
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install "$HANDBOOK"
      - name: Check every doc (findings become annotations)
        run: handbook check --format github{strict}

  release:
    if: startsWith(github.ref, 'refs/tags/v')
    needs: check
    runs-on: ubuntu-latest
    permissions:
      contents: write
{pages_permissions}    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install "$HANDBOOK"
      - name: Build the {built}
        run: |
          export SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
          {build}
        env:
          HANDBOOK_SIGNING_KEY: ${{ secrets.HANDBOOK_SIGNING_KEY }}
      - name: Pack the bundle
        run: handbook pack build/bundle -o "bundle-${GITHUB_REF_NAME}.tar.gz"
      - name: Attach it to a release
        run: gh release create "$GITHUB_REF_NAME" "bundle-${GITHUB_REF_NAME}.tar.gz" --generate-notes --verify-tag
        env:
          GH_TOKEN: ${{ github.token }}
{pages_steps}"""

_DEFAULTS = """
defaults:
  run:
    working-directory: {folder}
"""
"""The site's folder, when it is not the repository's root."""

_NEW = {
    "strictly": " strictly",
    "and_pages": " and deploys the site to GitHub Pages",
    "strict": " --strict",
    "pages_permissions": """\
      pages: write
      id-token: write
    environment:
      name: github-pages
      url: ${{ steps.deploy.outputs.page_url }}
""",
    "built": "site and the signed bundle",
    "build": "mkdocs build --strict",
    "pages_steps": """\
      - uses: actions/upload-pages-artifact@v3
        with:
          path: build/site
      - id: deploy
        uses: actions/deploy-pages@v4
""",
}
_ADOPTED = {
    "strictly": "",
    "and_pages": " (the site is published as it was before)",
    "strict": "",
    "pages_permissions": "",
    "built": "signed bundle",
    "build": 'test -n "$HANDBOOK_SIGNING_KEY" || '
    '{ echo "::error::set the repository secret HANDBOOK_SIGNING_KEY (handbook keygen)"; exit 1; }\n'
    "          handbook build",
    "pages_steps": "",
}
