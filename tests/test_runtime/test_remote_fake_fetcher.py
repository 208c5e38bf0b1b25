"""The remote reader behind its fetcher seam (`handbook.bundle.fetcher.Fetcher`): a fake
that serves a built bundle's bytes from a dict runs every check of
`handbook.bundle.remote` without a server, as python-tuf's tests fake its fetcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PUBLIC
from fake_fetcher import BASE, FakeFetcher, published

from handbook.bundle import remote
from handbook.bundle.layout import CATALOG, MANIFEST
from handbook.bundle.local import open_bundle
from handbook.bundle.trust import TrustPolicy
from handbook.errors import HashMismatchError

DOC = "device.acme.ac200"


@pytest.fixture
def trust(tmp_path: Path) -> TrustPolicy:
    return TrustPolicy.of([PUBLIC], state_dir=tmp_path / "state")


def test_a_remote_bundle_opens_through_a_fake_fetcher(
    plant_floor_bundle: Path, trust: TrustPolicy, tmp_path: Path
) -> None:
    fake = FakeFetcher(published(plant_floor_bundle))
    bundle = remote.open_lazy(BASE, trust, cache_dir=tmp_path / "cache", fetcher=fake)
    assert bundle.manifest.signed.library == "plant-floor" and bundle.signed_by
    assert fake.asked == [f"{BASE}/{MANIFEST}"]  # lazy: nothing else yet
    entry = (bundle.docs_with_id(DOC) or [])[0]
    assert bundle.read(entry.content) == (plant_floor_bundle / entry.content).read_bytes()
    # the immutable address was tried first; this host publishes files at their paths
    assert f"{BASE}/{entry.content}" in fake.asked
    assert any("/objects/" in url for url in fake.asked)


def test_a_file_the_fake_alters_is_refused(
    plant_floor_bundle: Path, trust: TrustPolicy, tmp_path: Path
) -> None:
    files = published(plant_floor_bundle)
    files[f"{BASE}/{CATALOG}"] = files[f"{BASE}/{CATALOG}"].replace(b"plant", b"plans", 1)
    bundle = remote.open_lazy(BASE, trust, cache_dir=tmp_path / "cache", fetcher=FakeFetcher(files))
    with pytest.raises(HashMismatchError, match=CATALOG):
        bundle.read(CATALOG)
    assert not any((tmp_path / "cache" / "objects").iterdir())  # nothing unverified kept


def test_fetch_through_a_fake_assembles_a_folder_and_sets_the_mark(
    plant_floor_bundle: Path, trust: TrustPolicy, tmp_path: Path
) -> None:
    fake = FakeFetcher(published(plant_floor_bundle))
    folder = remote.fetch(BASE, trust, cache_dir=tmp_path / "cache", fetcher=fake)
    assert (folder / MANIFEST).read_bytes() == (plant_floor_bundle / MANIFEST).read_bytes()
    assert open_bundle(folder, trust=trust).manifest.signed.library == "plant-floor"
    assert (tmp_path / "state" / "highwater.json").is_file()
    again = FakeFetcher(published(plant_floor_bundle))  # every file is in the cache now
    assert remote.fetch(BASE, trust, cache_dir=tmp_path / "cache", fetcher=again) == folder
    assert again.asked == [f"{BASE}/{MANIFEST}"]
