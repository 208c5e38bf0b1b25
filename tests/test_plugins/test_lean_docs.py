"""The check's docs keep only what the library checks and the bundle need: what served
the per-doc checks alone (code blocks' texts, HTML comments, YAML 1.1 words, the include
line map) is dropped once those checks ran, in the worker, so the build does not hold a
second copy of every code block. The findings about them are still made, at their lines."""

from __future__ import annotations

from pathlib import Path

from conftest import MakeLibrary

from handbook_build import load_config
from handbook_build.pipeline import build, check
from handbook_build.workers import PARALLEL_MIN_FILES

DOC = """\
---
id: {id}
title: Pump {id}
kind: procedure
summary: Servicing pump {id}.
flag: yes
---
# Pump {id}

<!-- ask jane.doe@contoso.com about this -->

```json
{{"broken": {value}}}
```

## Steps

Do the thing.
"""


def _library(make_library: MakeLibrary, count: int, value: str = "") -> Path:
    return make_library(
        {f"p{n:04}.md": DOC.format(id=f"p{n:04}", value=value) for n in range(count)}
    )


def _check_lean(config: Path) -> None:
    result = check(load_config(config))
    codes = {f.code for f in result.findings}
    assert {"HB404", "HB501", "HB210"} <= codes, codes  # address, broken JSON, `yes`
    for doc in result.docs:
        assert doc.fences == () and doc.comments == () and doc.bool_words == ()
        assert doc.origin == ()
        assert doc.sections and doc.headings and doc.fields  # what later checks and the bundle read


def test_checked_docs_drop_what_only_the_per_doc_checks_read(make_library: MakeLibrary) -> None:
    _check_lean(_library(make_library, 3))


def test_the_same_in_worker_processes(make_library: MakeLibrary) -> None:
    _check_lean(_library(make_library, PARALLEL_MIN_FILES))


def test_a_lean_doc_still_builds_its_code_into_the_bundle(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    """The code block is in the body, which is kept: content and search have it."""
    bundle = build(load_config(_library(make_library, 2, "1")), tmp_path / "b", None).bundle
    assert b'{"broken": 1}' in bundle.read(bundle.catalog.docs[0].content)
