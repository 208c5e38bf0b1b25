"""A remote bundle's files with chunk hashes (`chunks.bin`) are read by HTTP ranges: only
the chunks a call reads, adjacent ones in one request, each verified before use and
cached by its own sha256 only then. A host that ignores `Range` is read whole, as
before. A host that lies about a range (another range or size, a short or long body,
other bytes, a compressed range, a 416, a redirect to another host) is refused naming
the file and the bytes, and nothing it sent is kept. Against a real loopback server."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import itertools
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY, PUBLIC, ROOT, loopback_server
from fake_fetcher import BASE, FakeFetcher, published

from handbook import Library
from handbook.bundle import remote
from handbook.bundle.layout import CATALOG, MANIFEST, SEARCH
from handbook.bundle.ranged import ChunkedFile, Whole
from handbook.bundle.trust import TrustPolicy
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.write import seal

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
DOC = "device.acme.ac200"
QUERY = "compressor"
SMALL = 1024

Files = dict[str, bytes]


def files_of(folder: Path) -> Files:
    root = folder.resolve()
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example with chunk hashes of every file above 1 KiB in 1 KiB chunks (the
    build's 64 KiB above 1 MiB is never reached by the example), and a version 2.0.0
    whose index page says more (so its search file differs)."""
    base = tmp_path_factory.mktemp("ranges")
    shutil.copytree(EXAMPLE.parent, base / "v2-src")
    index = base / "v2-src" / "docs" / "index.md"
    index.write_text(index.read_text() + "\nThe compressor manual was revised.\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "CHUNK_BYTES", SMALL)
        mp.setattr(seal, "CHUNKED_ABOVE", SMALL)
        build(load_config(EXAMPLE), base / "v1", KEY)
        v2 = load_config(base / "v2-src" / EXAMPLE.name)
        build(dataclasses.replace(v2, version="2.0.0"), base / "v2", KEY)
    return {name: Path(os.path.realpath(base / name)) for name in ("v1", "v2")}


@pytest.fixture(scope="module")
def versions(folders: dict[str, Path]) -> dict[str, Files]:
    return {name: files_of(folder) for name, folder in folders.items()}


def with_objects(files: Files) -> Files:
    out = dict(files)
    for name, data in files.items():
        if name != MANIFEST:
            out[f"objects/{hashlib.sha256(data).hexdigest()}"] = data
    return out


class Handler(BaseHTTPRequestHandler):
    """GET /<site>/<path> from `sites`, honouring a single `Range` unless the site's mode
    says otherwise: `ignore` (200 with the whole file), or a lie told to every range
    request (see `_lie`). Each request is recorded with its Range header, each body's
    length too."""

    sites: ClassVar[dict[str, Files]] = {}
    modes: ClassVar[dict[str, str]] = {}
    liars: ClassVar[set[str]] = set()
    """The paths a lying site lies about: search.bin, at its path and as an object."""
    requests: ClassVar[list[tuple[str, str | None]]] = []
    sent: ClassVar[list[tuple[str, int]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/slowly/"):
            self._drip()
            return
        site, _, name = self.path.lstrip("/").partition("/")
        asked = self.headers.get("Range")
        with self.lock:
            self.requests.append((f"{site}/{name}", asked))
            data = self.sites.get(site, {}).get(name)
            mode = self.modes.get(site, "honour")
        if data is None:
            self.send_error(404)
            return
        found = re.fullmatch(r"bytes=(\d+)-(\d+)", asked or "")
        if mode == "ignore-and-alter" and found is not None and name in self.liars:
            self._send(200, data.replace(b"compressor", b"COMPRESSOR", 1), {}, name)
            return
        if found is None or mode == "ignore" or (mode != "honour" and name not in self.liars):
            self._send(200, data, {}, name)
            return
        first, last = int(found[1]), int(found[2])
        headers = {"Content-Range": f"bytes {first}-{last}/{len(data)}"}
        self._lie(mode, data, first, last, headers, name)

    def _lie(
        self, mode: str, data: bytes, first: int, last: int, headers: dict[str, str], name: str
    ) -> None:
        body = data[first : last + 1]
        if mode == "416":
            self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, name)
            return
        if mode in ("redirect", "redirect-to-drip"):  # another host (nothing there), or
            self.send_response(302)  # this one's /slowly/, which sends a byte at a time
            place = "http://localhost:1" if mode == "redirect" else "/slowly"
            self.send_header("Location", f"{place}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "shifted":  # the next bytes, announced as such
            body = data[first + 1 : last + 2]
            headers["Content-Range"] = f"bytes {first + 1}-{last + 1}/{len(data)}"
        elif mode == "other-size":
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data) + 1}"
        elif mode == "no-content-range":
            headers = {"Content-Type": "multipart/byteranges; boundary=x"}
        elif mode == "short":
            body = body[:-1]
        elif mode == "cut":  # announces the range's length, sends less, closes
            headers["Content-Length"] = str(len(body))
            body = body[:-1]
        elif mode == "long":
            body += b"x"
        elif mode == "flipped":
            body = bytes([body[0] ^ 1]) + body[1:]
        elif mode == "gzip":
            body, headers["Content-Encoding"] = gzip.compress(body, mtime=0), "gzip"
        self._send(206, body, headers, name)

    def _drip(self) -> None:
        """206 for the range asked of /slowly/<site>/<file>, then a byte every 0.2 s for
        at most 6 s."""
        site, _, name = self.path.removeprefix("/slowly/").partition("/")
        size = len(self.sites[site][name])
        first, last = map(int, (self.headers["Range"] or "").removeprefix("bytes=").split("-"))
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(last + 1 - first))
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(30):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        self.close_connection = True

    def _send(self, status: int, body: bytes, headers: dict[str, str], name: str) -> None:
        with self.lock:
            self.sent.append((name, len(body)))
        self.send_response(status)
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)
        if status == 206 and int(headers["Content-Length"]) > len(body):
            self.close_connection = True


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with loopback_server(Handler) as url:
        yield url


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    Handler.requests.clear()
    Handler.sent.clear()
    return {"cache_dir": tmp_path / "cache", "state_dir": tmp_path / "state"}


def publish(site: str, files: Files, mode: str = "honour") -> None:
    Handler.sites[site] = dict(files)
    Handler.modes[site] = mode
    Handler.liars |= {SEARCH, f"objects/{hashlib.sha256(files[SEARCH]).hexdigest()}"}


def open_url(server: str, site: str, dirs: dict[str, Path]) -> Library:
    return Library.open(f"{server}/{site}/", [PUBLIC], **dirs)


def ranges_of(site: str, files: Files, name: str) -> list[tuple[int, int]]:
    """The byte ranges asked of `name` under `site` (at its path or its object, when
    the site publishes it there: not the reader's probe of `objects/`)."""
    paths = {f"{site}/{name}", f"{site}/objects/{hashlib.sha256(files[name]).hexdigest()}"}
    paths = {path for path in paths if path.partition("/")[2] in Handler.sites[site]}
    out = []
    for path, asked in Handler.requests:
        if path in paths and asked:
            first, last = map(int, asked.removeprefix("bytes=").split("-"))
            out.append((first, last + 1))
    return out


def asked_ranges() -> list[str]:
    return [asked for _, asked in Handler.requests if asked]


def whole_sent(site_files: Files, name: str) -> bool:
    return (name, len(site_files[name])) in Handler.sent


def chunk_file(dirs: dict[str, Path], files: Files, name: str) -> Path:
    """Where the cache keeps the verified chunks of `name`, each at its place."""
    return dirs["cache_dir"] / "chunks" / hashlib.sha256(files[name]).hexdigest()


def kept_chunks(dirs: dict[str, Path], files: Files, name: str) -> list[int]:
    """The chunks of `name` that its chunk file holds, as the file has them."""
    path = chunk_file(dirs, files, name)
    kept = path.read_bytes() if path.exists() else b""
    data = files[name]
    return [
        n
        for n in range(-(-len(data) // SMALL))
        if kept[n * SMALL : (n + 1) * SMALL] == data[n * SMALL : (n + 1) * SMALL]
    ]


def cached(dirs: dict[str, Path]) -> set[str]:
    return {p.name for p in (dirs["cache_dir"] / "objects").iterdir()}


@pytest.mark.parametrize("layout", ["plain", "objects"])
def test_a_search_and_a_get_fetch_only_the_chunks_they_read(
    server: str,
    dirs: dict[str, Path],
    folders: dict[str, Path],
    versions: dict[str, Files],
    layout: str,
) -> None:
    files = versions["v1"]
    site = f"honour-{layout}"
    publish(site, with_objects(files) if layout == "objects" else files)
    local = Library.open(folders["v1"], [PUBLIC])
    lazy = open_url(server, site, dirs)
    assert lazy.search(QUERY) == local.search(QUERY)
    assert lazy.get(DOC) == local.get(DOC)
    search = lazy.bundle.ranged(SEARCH)
    assert isinstance(search, ChunkedFile) and 0 < sum(search._done) < len(search._done)
    asked = ranges_of(site, files, SEARCH)
    assert asked and not whole_sent(files, SEARCH) and not whole_sent(files, CATALOG)
    fetched = sum(end - start for start, end in asked)
    size = len(files[SEARCH])
    verified = [
        min(size, (n + 1) * SMALL) - n * SMALL for n, done in enumerate(search._done) if done
    ]
    assert fetched == sum(verified)  # each chunk fetched once, only the ones read
    assert any(end - start > SMALL for start, end in asked)  # adjacent chunks: one request
    assert all(start % SMALL == 0 for start, _ in asked)
    at_objects = [p for p, r in Handler.requests if r and "/objects/" in f"/{p}"]
    assert bool(at_objects) == (layout == "objects")
    assert isinstance(lazy.bundle.ranged(CATALOG), ChunkedFile)


def test_verified_chunks_are_cached_and_a_poisoned_one_is_fetched_again(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    files = versions["v1"]
    publish("cache", files)
    lazy = open_url(server, "cache", dirs)
    first = lazy.search(QUERY)
    search = lazy.bundle.ranged(SEARCH)
    assert isinstance(search, ChunkedFile)
    kept = kept_chunks(dirs, files, SEARCH)
    assert kept == [n for n, done in enumerate(search._done) if done]  # those verified
    assert hashlib.sha256(files[SEARCH]).hexdigest() not in cached(dirs)  # not whole
    Handler.requests.clear()
    again = open_url(server, "cache", dirs)
    assert again.search(QUERY)["hits"] == first["hits"]
    assert ranges_of("cache", files, SEARCH) == []  # every chunk from the cache, re-hashed
    path = chunk_file(dirs, files, SEARCH)
    poisoned = bytearray(path.read_bytes())
    poisoned[kept[-1] * SMALL] ^= 1
    path.write_bytes(bytes(poisoned))
    Handler.requests.clear()
    third = open_url(server, "cache", dirs)
    assert third.search(QUERY)["hits"] == first["hits"]
    assert ranges_of("cache", files, SEARCH) == [  # that chunk alone, fetched again
        (kept[-1] * SMALL, min(len(files[SEARCH]), (kept[-1] + 1) * SMALL))
    ]
    assert kept_chunks(dirs, files, SEARCH) == kept  # and written again


@pytest.mark.parametrize("link", ["symlink", "hardlink", "other-size"])
def test_a_chunk_file_that_is_a_link_or_of_another_size_is_replaced_not_written_through(
    server: str, dirs: dict[str, Path], versions: dict[str, Files], tmp_path: Path, link: str
) -> None:
    """Someone with access to the cache points the chunk file at another file: the
    reader writes nothing through the link, nor truncates anything; it puts a chunk file
    of its own in place, and keeps what it verifies there."""
    files = versions["v1"]
    publish(f"linked-{link}", files)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"someone's file\n")
    path = chunk_file(dirs, files, SEARCH)
    path.parent.mkdir(parents=True)
    if link == "symlink":
        path.symlink_to(elsewhere)
    elif link == "hardlink":
        os.link(elsewhere, path)
    else:
        path.write_bytes(b"\0" * 10)
    lazy = open_url(server, f"linked-{link}", dirs)
    assert lazy.search(QUERY)["count"] > 0
    assert ranges_of(f"linked-{link}", files, SEARCH)
    assert elsewhere.read_bytes() == b"someone's file\n"
    assert not path.is_symlink() and path.stat().st_nlink == 1
    assert path.stat().st_size == len(files[SEARCH]) and kept_chunks(dirs, files, SEARCH)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_a_whole_file_in_the_cache_gives_its_chunks(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    """An eager fetch left every file whole in the cache: a lazy reader takes the
    chunks it needs from there, hashing each, without asking the host."""
    files = versions["v1"]
    publish("eager", files)
    Library.open(f"{server}/eager/", [PUBLIC], lazy=False, **dirs)
    assert not kept_chunks(dirs, files, SEARCH)
    Handler.requests.clear()
    Handler.sent.clear()
    lazy = open_url(server, "eager", dirs)
    assert lazy.search(QUERY)["count"] > 0
    assert isinstance(lazy.bundle.ranged(SEARCH), ChunkedFile)
    assert ranges_of("eager", files, SEARCH) == [] and not whole_sent(files, SEARCH)


def test_a_host_that_ignores_range_is_read_whole(
    server: str, dirs: dict[str, Path], folders: dict[str, Path], versions: dict[str, Files]
) -> None:
    files = versions["v1"]
    publish("ignore", files, "ignore")
    local = Library.open(folders["v1"], [PUBLIC])
    lazy = open_url(server, "ignore", dirs)
    assert lazy.search(QUERY) == local.search(QUERY)
    assert lazy.get(DOC) == local.get(DOC)
    assert whole_sent(files, SEARCH)
    assert len(asked_ranges()) == 1  # one range asked, answered whole: whole files since
    assert isinstance(lazy.bundle.ranged(CATALOG), Whole)
    assert hashlib.sha256(files[SEARCH]).hexdigest() in cached(dirs)  # as any whole file


def test_a_whole_file_sent_for_a_range_is_checked_whole(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    """A host that ignores `Range` and sends other bytes than were signed: refused by
    the whole file's hash, nothing of it used or kept."""
    files = versions["v1"]
    assert b"compressor" in files[SEARCH]
    publish("altered", files, "ignore-and-alter")
    lazy = open_url(server, "altered", dirs)
    answer = lazy.search(QUERY)
    message = answer["error"]["message"]
    assert message.startswith(f"{SEARCH}: downloaded sha256 "), message
    assert "hits" not in answer and not kept_chunks(dirs, files, SEARCH)
    assert not cached(dirs) & {
        hashlib.sha256(files[SEARCH]).hexdigest(),
        hashlib.sha256(files[SEARCH].replace(b"compressor", b"COMPRESSOR", 1)).hexdigest(),
    }


LIES = [
    ("shifted", r"answered 206 with Content-Range 'bytes \d+-\d+/\d+', not 'bytes 0-"),
    ("other-size", r"answered 206 with Content-Range 'bytes 0-\d+/\d+', not 'bytes 0-"),
    ("no-content-range", r"answered 206 with Content-Range '', not 'bytes 0-"),
    ("short", r"sent 1,023 bytes of the range"),
    ("cut", r"sent 1,023 bytes of the range"),
    ("long", r"(more than the|the server announces)"),
    ("flipped", r"chunk 0 \(bytes 0 to 1,024\) as downloaded from .* does not match its sha256"),
    ("gzip", r"sent a range with Content-Encoding 'gzip'"),
    ("416", r"answered 416"),
    ("redirect", r"redirect to http://localhost:1/.* refused: another host"),
]


@pytest.mark.parametrize(("mode", "observed"), LIES, ids=[m for m, _ in LIES])
@pytest.mark.parametrize("layout", ["plain", "objects"])
def test_a_lying_host_is_refused_by_file_and_bytes_and_nothing_is_kept(
    server: str,
    dirs: dict[str, Path],
    versions: dict[str, Files],
    mode: str,
    observed: str,
    layout: str,
) -> None:
    files = versions["v1"]
    site = f"lie-{mode}-{layout}"
    publish(site, with_objects(files) if layout == "objects" else files, mode)
    lazy = open_url(server, site, dirs)
    answer = lazy.search(QUERY)
    assert answer["error"]["code"] == "integrity_error", answer
    message = answer["error"]["message"]
    assert message.startswith(f"{SEARCH}"), message
    assert re.search(r"\(bytes 0 to [\d,]+\)", message), message  # the file and the bytes
    assert re.search(observed, message), message
    assert "changed on the server" not in message  # the manifest did not change
    assert "hits" not in answer
    assert lazy.status()["integrity_error"].startswith(message.split(":")[0])
    assert hashlib.sha256(files[SEARCH]).hexdigest() not in cached(dirs)
    path = chunk_file(dirs, files, SEARCH)
    assert not path.exists() or not path.read_bytes().strip(b"\0")  # nothing written
    again = lazy.search(QUERY)  # asked again, refused again: nothing was marked verified
    assert again["error"]["code"] == "integrity_error"


def test_concurrent_searches_fetch_each_chunk_once(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    files = versions["v1"]
    publish("threads", files)
    lazy = open_url(server, "threads", dirs)
    queries = ["compressor", "modbus", "pressure valve", "register map"] * 4
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lazy.search, queries))
    assert all("hits" in answer for answer in answers), answers
    asked = sorted(ranges_of("threads", files, SEARCH))
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(asked))  # no overlap


def test_a_fetcher_without_ranges_reads_whole_files(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """A `Fetcher` with `fetch` alone (a test's fake, a custom transport) still reads a
    bundle with chunk hashes: every file whole, as before ranges existed."""
    fake = FakeFetcher(published(folders["v1"]))
    trust = TrustPolicy.of([PUBLIC], state_dir=tmp_path / "state")
    bundle = remote.open_lazy(BASE, trust, cache_dir=tmp_path / "cache", fetcher=fake)
    assert isinstance(bundle.ranged(SEARCH), Whole)
    assert f"{BASE}/{SEARCH}" in fake.asked


def test_a_range_redirected_within_the_host_still_ends_by_its_deadline(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    """The redirect is followed (same host), and the request it makes ends by the
    deadline the first one was given: a host dripping bytes cannot hold the reader."""
    publish("drip", versions["v1"], "redirect-to-drip")
    lazy = open_url(server, "drip", dirs | {"timeout": 1.0})  # type: ignore[dict-item]
    message = lazy.search(QUERY)["error"]["message"]
    # not "sent 30 bytes of the range", when the drip ends after 6 s
    assert message.startswith(f"{SEARCH} (bytes 0 to 1,024): too slow"), message
    assert "within 1 s (the deadline of this download)" in message


def test_a_swap_on_a_plain_host_mid_session_is_reported_then_a_reload_reads_it(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    assert versions["v1"][SEARCH] != versions["v2"][SEARCH]
    publish("swap", versions["v1"])
    lazy = open_url(server, "swap", dirs)
    assert lazy.version == "1.0.0"
    assert isinstance(lazy.bundle.ranged(SEARCH), ChunkedFile)  # chunks.bin read, no chunk
    publish("swap", versions["v2"])  # every file replaced in place
    answer = lazy.search(QUERY)
    message = answer["error"]["message"]
    assert answer["error"]["code"] == "integrity_error" and "hits" not in answer
    assert re.match(r"search\.bin(: chunk 0)? \(bytes 0 to 1,024\)", message), message
    assert "changed on the server since it was opened (version 1.0.0)" in message
    lazy.reload()
    assert lazy.version == "2.0.0" and lazy.search(QUERY)["count"] > 0
