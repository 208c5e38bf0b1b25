"""One test says what is a URL (`handbook.bundle.locations.is_url`: any `scheme://`), and
`Library.open`, the reloader and `handbook serve` all use it: ``s3://bucket/x`` used to be
a URL to the library and a missing folder to the reloader and the server. A scheme the
runtime does not read is refused naming it and what is read instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PUBLIC

from handbook import Library
from handbook.bundle import locations
from handbook.errors import DownloadError
from handbook.libraries.reloader import Reloader
from handbook.serve import server


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("s3://bucket/x", "s3"),
        ("ftp://127.0.0.1/bundle", "ftp"),
        ("file:///etc", "file"),
        ("S3://bucket/x", "s3"),
    ],
)
def test_an_unsupported_scheme_is_refused_naming_it(url: str, scheme: str, tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as refused:
        Library.open(url, [PUBLIC], cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")
    message = str(refused.value)
    assert f"the scheme {scheme!r} is not supported" in message, message
    assert "a folder or from an https:// URL" in message, message
    assert not (tmp_path / "cache").exists()  # refused before anything was fetched or kept


LOCATIONS = {
    "s3://bucket/x": True,
    "https://kb.example/bundle": True,
    "http://127.0.0.1:8000/bundle": True,
    "file:///srv/bundle": True,
    "build/bundle": False,
    "/srv/bundles/v1": False,
    "C:\\bundles\\v1": False,
    "notes:v1": False,
}


@pytest.mark.parametrize(("location", "url"), LOCATIONS.items())
def test_the_library_the_reloader_and_the_server_agree(
    plant_floor_bundle: Path, location: str, url: bool
) -> None:
    assert locations.is_url(location) is url
    assert server.is_url is locations.is_url
    reloader = Reloader(Library.open(plant_floor_bundle, [PUBLIC]), location, interval=3600)
    assert (reloader.url == location) is url  # a URL is polled, never watched as a folder


def test_a_path_object_is_a_folder() -> None:
    assert not locations.is_url(Path("s3://bucket/x"))
