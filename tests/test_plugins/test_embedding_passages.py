"""The passages a `semantic: true` build embeds, on a real library with attached markdown.

Regression: the build of ../shared/data/real-sites/agent-skills with `semantic: true`
failed with "index out of bounds on dimension 1" (bench/README.md), since the search
file's entries include the sections of skills' attached files (`references/…`), which the
embedding step did not number. The passages must be exactly the search entries, in the
runtime's numbering, each with its doc and, for attached files, the file's path.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REAL_SITES, run_cli, shared_data

from handbook import Library
from handbook.bundle.layout import SEARCH
from handbook.search.index import SearchIndex
from handbook_build import load_config
from handbook_build.pipeline import build

pytest.importorskip("numpy")
embeddings = pytest.importorskip("handbook_build.write.embeddings")


def test_agent_skills_passages_are_every_search_entry(tmp_path: Path) -> None:
    tree = shared_data(REAL_SITES / "agent-skills")
    root = tmp_path / "agent-skills"
    shutil.copytree(tree, root)
    assert run_cli("init", "--adopt", str(root), "--install-from", "handbook==0.1.0").exit_code == 0
    out = tmp_path / "bundle"
    build(load_config(root / "handbook.yml"), out, None)
    lib = Library.open(out, allow_unsigned=True)
    index = SearchIndex((out / SEARCH).read_bytes())
    texts = embeddings.passage_texts(out, lib.bundle.catalog)
    assert len(texts) == index.entries > len(lib.bundle.catalog.docs) * 2
    resources = 0
    for entry, text in enumerate(texts):
        passage = lib.snapshot.retriever.passage(entry)
        doc = lib.bundle.catalog.docs[passage.doc]
        assert text.startswith(doc.title)
        if passage.resource:
            resources += 1
            assert text.split("\n")[1] == passage.resource
    assert resources > 100  # the attached files' sections, which the old count left out
