"""`Library.open(URL)` reads lazily: the manifest at open, then only the files a call
needs, each verified before use and cached by digest. Against a real HTTP server on
loopback whose files a test changes between calls: a publisher swapping versions
mid-session never produces a mixed read (under the plain layout the reader says the
bundle changed and a reload reads the new one; under the `objects/<sha256>` layout the
old version keeps reading whole)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY, PUBLIC, ROOT, loopback_server

from handbook import Library
from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS, MANIFEST, SEARCH
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
DOC = "device.acme.ac200"

Files = dict[str, bytes]


def files_of(folder: Path) -> Files:
    root = folder.resolve()
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def with_objects(files: Files, *older: Files) -> Files:
    """The `objects/<sha256>` publish layout: every listed file again under its digest,
    the objects of earlier versions kept."""
    out = dict(files)
    for version in (*older, files):
        for name, data in version.items():
            if name != MANIFEST:
                out[f"objects/{hashlib.sha256(data).hexdigest()}"] = data
    return out


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Files]:
    base = tmp_path_factory.mktemp("lazy")
    config = load_config(EXAMPLE)
    made = {}
    for name, version in [("v1", "1.0.0"), ("v2", "2.0.0")]:
        build(dataclasses.replace(config, version=version), base / name, KEY)
        made[name] = files_of(base / name)
    return made


class Handler(BaseHTTPRequestHandler):
    """GET /<site>/<path> from `sites`, which tests change between calls; every request
    and the body bytes sent are recorded."""

    sites: ClassVar[dict[str, Files]] = {}
    requests: ClassVar[list[str]] = []
    sent: ClassVar[list[int]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site, _, name = self.path.lstrip("/").partition("/")
        with self.lock:
            self.requests.append(f"{site}/{name}")
            data = self.sites.get(site, {}).get(name)
            if data is not None:
                self.sent.append(len(data))
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with loopback_server(Handler) as url:
        yield url


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    Handler.requests.clear()
    Handler.sent.clear()
    return {"cache_dir": tmp_path / "cache", "state_dir": tmp_path / "state"}


def publish(site: str, files: Files) -> None:
    Handler.sites[site] = dict(files)


def asked(site: str) -> list[str]:
    """The files asked for under `site`, without the reader's probe of `objects/`."""
    prefix = f"{site}/"
    seen = [r.removeprefix(prefix) for r in Handler.requests if r.startswith(prefix)]
    return [r for r in seen if not r.startswith("objects/")]


def open_url(server: str, site: str, dirs: dict[str, Path], **options: Any) -> Library:
    return Library.open(f"{server}/{site}/", [PUBLIC], **dirs, **options)


def test_a_lazy_open_transfers_only_the_manifest(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("open", versions["v1"])
    lib = open_url(server, "open", dirs)
    assert (lib.name, lib.version, lib.bundle.signature_state) == (
        "plant-floor",
        "1.0.0",
        "verified",
    )
    assert Handler.requests == ["open/manifest.json"]
    assert Handler.sent == [len(versions["v1"][MANIFEST])]


def test_a_get_fetches_only_what_it_needs_and_a_search_the_search_file(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("get", versions["v1"])
    lib = open_url(server, "get", dirs)
    answer = lib.get(DOC)
    assert answer["found"] is True, answer
    doc = lib.doc(DOC)
    assert doc is not None
    assert sorted(asked("get")) == sorted([MANIFEST, CATALOG_OFFSETS, CATALOG, doc.content])
    Handler.requests.clear()
    assert lib.search("compressor")["count"] > 0
    fetched = asked("get")
    assert SEARCH in fetched and CATALOG not in fetched  # the catalog's bytes are kept
    assert not [n for n in fetched if n.endswith((".json.gz", "index.json", "tools.json"))]
    Handler.requests.clear()
    lib.search("compressor")
    lib.get(DOC)
    assert asked("get") == []  # once verified, kept


def test_a_cached_file_is_not_downloaded_again_by_the_next_open(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("cache", versions["v1"])
    first = open_url(server, "cache", dirs).get(DOC)
    Handler.requests.clear()
    again = open_url(server, "cache", dirs)
    assert again.get(DOC) == first
    assert asked("cache") == [MANIFEST]  # every file from the digest cache, re-hashed
    objects = dirs["cache_dir"] / "objects"
    catalog = objects / hashlib.sha256(versions["v1"][CATALOG]).hexdigest()
    catalog.write_bytes(catalog.read_bytes().replace(b"plant", b"PLANT", 1))  # poisoned
    Handler.requests.clear()
    assert open_url(server, "cache", dirs).get(DOC) == first
    assert sorted(asked("cache")) == [CATALOG, MANIFEST]  # fetched again, not served


@pytest.mark.parametrize("layout", ["plain", "objects"])
def test_a_tampered_file_is_refused_by_name_and_nothing_of_it_served(
    server: str, dirs: dict[str, Path], versions: dict[str, Files], layout: str
) -> None:
    files = dict(versions["v1"])
    publish("clean", files)
    doc = open_url(server, "clean", dirs).doc(DOC)
    assert doc is not None
    files[doc.content] = files[doc.content].replace(b"a", b"b", 1)
    if layout == "objects":
        files = with_objects(files)
        files[f"objects/{doc.sha256}"] = files[doc.content]
    publish("tampered", files)
    lib = open_url(server, "tampered", dirs | {"cache_dir": dirs["cache_dir"].with_name("c2")})
    answer = lib.get(DOC)
    assert answer["error"]["code"] == "integrity_error"
    assert answer["error"]["message"].startswith(f"{doc.content}: downloaded sha256 ")
    assert "changed on the server" not in answer["error"]["message"]  # the manifest did not
    assert "content" not in answer
    assert lib.status()["integrity_error"].startswith(doc.content)
    stored = {p.name for p in (dirs["cache_dir"].with_name("c2") / "objects").iterdir()}
    assert hashlib.sha256(files[doc.content]).hexdigest() not in stored


@pytest.mark.parametrize(
    ("change", "observed"),
    [
        ("replaced", f"{CATALOG_OFFSETS}: downloaded sha256 "),
        ("removed", f"{CATALOG_OFFSETS}: {{url}}{CATALOG_OFFSETS} answered 404"),
        ("grown", f"{CATALOG_OFFSETS}: the server announces "),
    ],
)
def test_a_swap_on_a_plain_host_is_refused_mid_session_then_a_reload_reads_it(
    server: str, dirs: dict[str, Path], versions: dict[str, Files], change: str, observed: str
) -> None:
    publish("swap", versions["v1"])
    lib = open_url(server, "swap", dirs)
    assert lib.version == "1.0.0"
    files = dict(versions["v2"])  # the publisher replaces every file in place
    if change == "removed":  # a file the old manifest lists is gone
        files[MANIFEST] = versions["v2"][MANIFEST]
        del files[CATALOG_OFFSETS]
    elif change == "grown":
        files[CATALOG_OFFSETS] += b"\0" * 1000
    publish("swap", files)
    answer = lib.get(DOC)
    message = answer["error"]["message"]
    assert answer["error"]["code"] == "integrity_error" and "content" not in answer
    assert message.startswith(observed.format(url=f"{server}/swap/")), message
    if change != "replaced":
        publish("swap", versions["v2"])
    assert "changed on the server since it was opened (version 1.0.0)" in message
    assert "reopen it (reload) to read the new version" in message
    assert lib.reload() == {
        "reloaded": True,
        "changed": True,
        "library": "plant-floor",
        "version": "2.0.0",
    }
    assert lib.get(DOC)["found"] is True and lib.search("compressor")["count"] > 0
    assert lib.reload()["changed"] is False  # the same manifest: the snapshot is kept
    Handler.requests.clear()
    lib.get(DOC)
    assert asked("swap") == []


def test_a_swap_on_an_objects_host_keeps_the_old_version_whole_until_reload(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("objects", with_objects(versions["v1"]))
    lib = open_url(server, "objects", dirs)
    publish("objects", with_objects(versions["v2"], versions["v1"]))
    before = lib.get(DOC)
    assert before["found"] is True, before
    assert lib.search("compressor")["count"] > 0
    assert set(asked("objects")) == {MANIFEST}  # every file read at its immutable address
    reading = lib.snapshot
    lib.reload()
    assert lib.version == "2.0.0"
    assert reading.bundle.manifest.signed.version == "1.0.0"
    assert reading.doc(DOC) is not None  # a call that started on 1.0.0 finishes on it


def test_concurrent_calls_download_each_file_once(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("threads", versions["v1"])
    lib = open_url(server, "threads", dirs)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: lib.search("compressor"), range(16)))
    assert all(a["count"] > 0 for a in answers)
    fetched = asked("threads")
    assert sorted(set(fetched)) == sorted(fetched)


def test_an_endless_file_is_cut_off_at_its_listed_size(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    files = dict(versions["v1"])
    publish("endless", files)
    lib = open_url(server, "endless", dirs)
    # The server's catalog.json grows past its listed size: the download stops there.
    files[CATALOG] = files[CATALOG] + b" " * 100_000
    publish("endless", files)
    answer = lib.get(DOC)
    assert answer["error"]["code"] == "integrity_error"
    assert re.match(
        r"catalog\.json: (more than the|the server announces)", answer["error"]["message"]
    )


def test_eager_opens_remain_for_offline_use(
    server: str, dirs: dict[str, Path], versions: dict[str, Files]
) -> None:
    publish("eager", versions["v1"])
    lib = open_url(server, "eager", dirs, lazy=False)
    listed = set(lib.bundle.listing())  # the manifest's files and the content it vouches for
    assert set(asked("eager")) == {MANIFEST, *listed}
    assert lib.bundle.path.parent.name == "bundles"


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with chunk hashes (chunks.bin) of every file above 1 KiB."""
    from handbook_build.write import seal

    out = tmp_path_factory.mktemp("chunked") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "CHUNK_BYTES", 1024)
        mp.setattr(seal, "CHUNKED_ABOVE", 1024)
        build(load_config(EXAMPLE), out, KEY)
    return out


@pytest.mark.parametrize("layout", ["plain", "objects"])
def test_a_bundle_with_chunk_hashes_reads_remotely_as_locally(
    server: str, dirs: dict[str, Path], chunked: Path, layout: str
) -> None:
    """This server ignores `Range`: a lazy reader asks for the search file's first
    chunks by range, is sent the whole file, checks it whole and reads whole files from
    then on (`test_remote_ranges` has a server that honours ranges); an eager fetch
    assembles a folder that is then read by chunks. Both answer as the local folder
    does."""
    from handbook.bundle.layout import CHUNKS
    from handbook.bundle.ranged import ChunkedFile, Whole

    files = files_of(chunked)
    site = f"chunked-{layout}"
    publish(site, with_objects(files) if layout == "objects" else files)
    local = Library.open(chunked, [PUBLIC])
    lazy = open_url(server, site, dirs)
    assert lazy.search("compressor") == local.search("compressor")
    assert lazy.get(DOC) == local.get(DOC)
    assert isinstance(lazy.bundle.ranged(SEARCH), ChunkedFile)
    assert isinstance(lazy.bundle.ranged(CATALOG), Whole)  # the host ignores ranges
    assert CHUNKS in asked(site) or layout == "objects"
    assert Handler.sent.count(len(files[SEARCH])) == 1  # fetched whole, once
    eager = open_url(server, site, dirs, lazy=False)
    assert isinstance(eager.bundle.ranged(SEARCH), ChunkedFile)
    assert eager.search("compressor") == local.search("compressor")
    assert eager.get(DOC) == local.get(DOC)
