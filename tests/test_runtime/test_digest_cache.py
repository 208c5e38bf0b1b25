"""The digest cache of remote bundles (`handbook.bundle.digest_cache`) leaves nothing
behind: a bundle folder it replaces is removed once the new one is in place (it used to
stay as ``.old-*`` forever, one more copy of a bundle at each rebuild), and a write that
fails removes its temporary file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import PUBLIC
from fake_fetcher import BASE, FakeFetcher, published

from handbook.bundle import remote
from handbook.bundle.digest_cache import DigestCache
from handbook.bundle.layout import CATALOG, MANIFEST
from handbook.bundle.manifest import FileEntry
from handbook.bundle.trust import TrustPolicy


def test_a_rebuilt_folder_leaves_no_old_copy(plant_floor_bundle: Path, tmp_path: Path) -> None:
    trust = TrustPolicy.of([PUBLIC], state_dir=tmp_path / "state")
    cache = tmp_path / "cache"
    folder = remote.fetch(
        BASE, trust, cache_dir=cache, fetcher=FakeFetcher(published(plant_floor_bundle))
    )
    (folder / CATALOG).write_bytes(b"tampered")  # the assembled folder no longer verifies
    stale = cache / "bundles" / ".old-0123"  # left by an earlier version of the cache
    (stale / "docs").mkdir(parents=True)
    again = remote.fetch(
        BASE, trust, cache_dir=cache, fetcher=FakeFetcher(published(plant_floor_bundle))
    )
    assert (
        again == folder
        and (folder / CATALOG).read_bytes() == (plant_floor_bundle / CATALOG).read_bytes()
    )
    assert sorted(p.name for p in (cache / "bundles").iterdir()) == [folder.name]


def test_a_replaced_link_is_removed_not_followed(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path / "cache")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine", encoding="utf-8")
    cache.bundles.mkdir()
    cache.folder("d1").symlink_to(outside, target_is_directory=True)
    data = b"manifest"
    cache.store(hashlib.sha256(b"x").hexdigest(), b"x")
    files = {"a.txt": FileEntry(hashlib.sha256(b"x").hexdigest(), 1)}
    folder = cache.assemble("d1", data, files)
    assert (folder / "a.txt").read_bytes() == b"x" and (folder / MANIFEST).read_bytes() == data
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in cache.bundles.iterdir()) == ["d1"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path / "cache")
    digest = hashlib.sha256(b"data").hexdigest()
    (cache.objects / digest / "in-the-way").mkdir(parents=True)  # the rename cannot happen
    with pytest.raises(OSError):
        cache.store(digest, b"data")
    assert sorted(p.name for p in cache.objects.iterdir()) == [digest]
