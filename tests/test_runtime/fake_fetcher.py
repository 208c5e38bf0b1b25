"""A fake `handbook.bundle.fetcher.Fetcher` serving a bundle's bytes from a dict, as
python-tuf's tests fake its fetcher: the remote reader's checks run without a server."""

from __future__ import annotations

from pathlib import Path

from handbook.bundle.fetcher import Deadline, NotFound, TooLarge

BASE = "https://bundle.test/plant-floor"


class FakeFetcher:
    """Serves `files` (URL to bytes) and records each URL asked for."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.asked = files, list[str]()

    def fetch(self, url: str, limit: int, deadline: Deadline, name: str) -> bytes:
        self.asked.append(url)
        data = self.files.get(url)
        if data is None:
            raise NotFound(f"{name}: {url} answered 404")
        if len(data) > limit:
            raise TooLarge(f"{name}: more than {limit:,} bytes")
        return data


def published(folder: Path) -> dict[str, bytes]:
    """The bundle folder as a plain-layout host serves it."""
    return {
        f"{BASE}/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
    }
