"""The embedding cache: a rebuild embeds only new or changed passages, damaged entries are
embedded again rather than served, and the bundle is the same with or without it."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from conftest import ROOT, embedding_model

from handbook_build import load_config
from handbook_build.pipeline import build

np = pytest.importorskip("numpy")
encoder = pytest.importorskip("handbook.search.encoder")
cache_module = pytest.importorskip("handbook_build.write.embedding_cache")

EXAMPLE = ROOT / "examples" / "plant-floor"
CHANGED = "docs/guides/commissioning.md"


@pytest.fixture(autouse=True)
def _model() -> None:
    embedding_model()


def library(root: Path, cache: str | None = None) -> Path:
    """The plant-floor example with `semantic: true` (and `embedding_cache: <cache>`)."""
    shutil.copytree(EXAMPLE / "docs", root / "docs")
    extra = "      semantic: true\n" + (f"      embedding_cache: {cache}\n" if cache else "")
    text = (EXAMPLE / "mkdocs.yml").read_text()
    (root / "mkdocs.yml").write_text(
        text.replace("      version: 1.0.0\n", "      version: 1.0.0\n" + extra)
    )
    return root / "mkdocs.yml"


def embed(config: Path, out: Path) -> tuple[int, bytes]:
    """Build; (passages embedded, vectors.bin's bytes)."""
    totals = [0]
    build(load_config(config), out, None, embedding=lambda done, total: totals.append(total))
    return totals[-1], (out / "vectors.bin").read_bytes()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(cache_module.ENV, str(where))
    return where


def test_rebuild_embeds_only_what_changed_and_bundles_stay_identical(
    tmp_path: Path, cache_dir: Path
) -> None:
    config = library(tmp_path / "lib")
    first, fresh = embed(config, tmp_path / "b1")
    assert first > 10 and (cache_dir / cache_module.FILE).is_file()
    again, cached = embed(config, tmp_path / "b2")
    assert again == 0
    assert cached == fresh  # vectors from the cache are the bytes a fresh build writes
    doc = tmp_path / "lib" / CHANGED
    doc.write_text(doc.read_text().replace("\n## ", "\nA new sentence about escalation.\n\n## ", 1))
    changed, after = embed(config, tmp_path / "b3")
    assert changed == 1  # only the one passage whose text changed
    off = library(tmp_path / "off", cache="off")
    (tmp_path / "off" / CHANGED).write_text(doc.read_text())
    uncached, reference = embed(off, tmp_path / "b4")
    assert uncached == first and after == reference  # no cache: same bytes


def test_damaged_entries_are_embedded_again_never_served(tmp_path: Path, cache_dir: Path) -> None:
    config = library(tmp_path / "lib")
    _, fresh = embed(config, tmp_path / "b1")
    db = sqlite3.connect(cache_dir / cache_module.FILE)
    rows = db.execute("SELECT text, vector FROM vectors ORDER BY text LIMIT 3").fetchall()
    flipped = bytes([rows[0][1][0] ^ 0x40]) + rows[0][1][1:]
    with db:
        db.execute("UPDATE vectors SET vector = ? WHERE text = ?", (flipped, rows[0][0]))
        db.execute("UPDATE vectors SET vector = ? WHERE text = ?", (rows[1][1][:100], rows[1][0]))
        db.execute("UPDATE vectors SET digest = ? WHERE text = ?", (b"12345678", rows[2][0]))
    db.close()
    embedded, vectors = embed(config, tmp_path / "b2")
    assert embedded == 3 and vectors == fresh
    assert embed(config, tmp_path / "b3")[0] == 0  # the damaged rows were overwritten


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_cache_file_is_set_aside_and_rebuilt(
    tmp_path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    config = library(tmp_path / "lib")
    first, fresh = embed(config, tmp_path / "b1")
    path = cache_dir / cache_module.FILE
    data = path.read_bytes()
    path.write_bytes(b"not a database " * 100 if damage == "garbage" else data[: len(data) // 3])
    with caplog.at_level(logging.WARNING):
        embedded, vectors = embed(config, tmp_path / "b2")
    assert vectors == fresh
    if damage == "garbage":
        assert embedded == first and "not a readable embedding cache" in caplog.text
    assert embed(config, tmp_path / "b3")[0] == 0


def test_a_cache_that_cannot_be_written_does_not_fail_the_build(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    config = library(tmp_path / "lib", cache=str(blocker / "cache"))
    with caplog.at_level(logging.WARNING):
        embedded, _ = embed(config, tmp_path / "b1")
    assert embedded > 10 and "embedding cache" in caplog.text


def test_the_option_names_a_folder_relative_to_the_config(tmp_path: Path, cache_dir: Path) -> None:
    config = library(tmp_path / "lib", cache=".cache/vectors")
    embed(config, tmp_path / "b1")
    assert (tmp_path / "lib" / ".cache" / "vectors" / cache_module.FILE).is_file()
    assert not cache_dir.exists()


def test_the_default_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache_module.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_module.folder() == tmp_path / "xdg" / "handbook"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_module.folder() == tmp_path / "home" / ".cache" / "handbook"
    monkeypatch.setenv(cache_module.ENV, str(tmp_path / "env"))
    assert cache_module.folder() == tmp_path / "env"
    assert cache_module.folder(tmp_path / "given") == tmp_path / "given"


def rows(n: int, seed: int) -> list[tuple[bytes, object]]:
    rng = np.random.default_rng(seed)
    return [
        (cache_module.text_key(f"{seed}-{i}"), rng.standard_normal(8).astype(np.float32))
        for i in range(n)
    ]


def test_writers_at_once_each_land_whole(tmp_path: Path) -> None:
    """Builds sharing a folder (parallel CI jobs) write at once; every row of each is
    readable after, none damaged."""
    model = "ab" * 32
    written = {seed: rows(300, seed) for seed in range(4)}

    def write(seed: int) -> None:
        cache = cache_module.EmbeddingCache(tmp_path, model, 8)
        for start in range(0, 300, 50):
            cache.put(written[seed][start : start + 50])
        cache.close()

    threads = [threading.Thread(target=write, args=(seed,)) for seed in written]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache = cache_module.EmbeddingCache(tmp_path, model, 8)
    every = [row for seed_rows in written.values() for row in seed_rows]
    found = cache.get([key for key, _ in every])
    assert len(found) == len(every)
    for key, vector in every:
        assert np.array_equal(found[key], np.asarray(vector, dtype=np.float16))
    other = cache_module.EmbeddingCache(tmp_path, "cd" * 32, 8)  # another model: no hits
    assert other.get([key for key, _ in every]) == {}


def test_the_cache_is_bounded_and_drops_the_least_recently_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "MAX_ROWS", 100)
    clock = iter(range(10**6, 2 * 10**6, 10**5))
    monkeypatch.setattr(cache_module.time, "time", lambda: next(clock))
    cache = cache_module.EmbeddingCache(tmp_path, "ab" * 32, 8)
    old, kept, new = rows(60, 1), rows(60, 2), rows(60, 3)
    cache.put(old)
    cache.put(kept)
    assert len(cache.get([k for k, _ in kept])) == 60  # read: now more recent than `old`
    cache.put(new)
    assert cache.db.execute("SELECT count(*) FROM vectors").fetchone() == (100,)
    assert len(cache.get([k for k, _ in kept + new])) == 100
    assert cache.get([k for k, _ in old]) == {}
