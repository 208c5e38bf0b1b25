"""`handbook serve` as a user runs it: a real process on loopback serving several
libraries at once (qualified refs, each bundle under /bundle/<library>/, the first
library's site), a remote bundle by URL, an index at /api/v1/, a clear refusal for a
plain GET of /mcp, a quiet exit 0 on Ctrl-C, and its request log on stderr or in a file."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, ROOT, get_json, loopback_server, request

from handbook_build import load_config
from handbook_build.pipeline import build


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve")
    out = {}
    for example in ("plant-floor", "skills"):
        out[example] = root / example
        build(load_config(ROOT / "examples" / example / "mkdocs.yml"), out[example], KEY)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(*args: str) -> Iterator[tuple[tuple[str, int], subprocess.Popen[str]]]:
    """`handbook serve ARGS` on a free port, until the caller is done (then killed)."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from handbook.cli import main; main()",
            "serve",
            "--port",
            str(port),
            "--key",
            PUBLIC,
            "--site",
            "no-site-here",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    address = ("127.0.0.1", port)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(address, timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"serve did not start: {process.communicate()}") from None
            time.sleep(0.05)
    try:
        yield address, process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_several_libraries_at_once(bundles: dict[str, Path]) -> None:
    args = [a for path in bundles.values() for a in ("--bundle", str(path))]
    with serving(*args) as (address, _):
        status, body = get_json(address, "/api/v1/get?doc_id=plant-skills:skill.modbus-scan")
        assert status == 200 and body["ref"] == "plant-skills:skill.modbus-scan"
        status, body = get_json(address, "/api/v1/list?limit=100")
        assert {d["library"] for d in body["docs"]} == {"plant-floor", "plant-skills"}
        for library, path in (
            ("plant-floor", bundles["plant-floor"]),
            ("plant-skills", bundles["skills"]),
        ):
            status, _, data = request(address, f"/bundle/{library}/manifest.json")
            assert status == 200 and data == (path / "manifest.json").read_bytes()
        first, _, data = request(address, "/bundle/manifest.json")  # the first library's
        assert first == 200 and data == (bundles["plant-floor"] / "manifest.json").read_bytes()
        status, index = get_json(address, "/api/v1/")
        assert status == 200 and index["context"]["libraries"] == ["plant-floor", "plant-skills"]
        assert {t["route"] for t in index["tools"]} >= {"/api/v1/get", "/api/v1/search"}


def test_a_remote_bundle(bundles: dict[str, Path], tmp_path: Path) -> None:
    folder = bundles["plant-floor"].resolve()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    env_cache = {
        "HANDBOOK_CACHE_DIR": str(tmp_path / "cache"),
        "HANDBOOK_STATE_DIR": str(tmp_path / "state"),
    }
    os.environ.update(env_cache)
    try:
        with loopback_server(handler) as url, serving("--bundle", url) as (address, _):
            status, body = get_json(address, "/api/v1/get?doc_id=device.acme.ac200")
            assert status == 200 and body["found"] is True
    finally:
        for name in env_cache:
            os.environ.pop(name)


def test_index_plain_mcp_get_and_ctrl_c(bundles: dict[str, Path]) -> None:
    with serving("--bundle", str(bundles["plant-floor"])) as (address, process):
        status, index = get_json(address, "/api/v1/")
        assert status == 200 and index["openapi"] == "/api/v1/openapi.json"
        assert get_json(address, "/api/v1")[0] == 200
        started = time.monotonic()
        status, headers, body = request(address, "/mcp")  # curl's plain GET: answered at once
        assert status == 405 and headers["allow"] == "POST, DELETE" and b"POST" in body
        assert time.monotonic() - started < 30
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Aborted" not in err and "Traceback" not in err


def test_request_logs_go_to_stderr_or_to_a_file(bundles: dict[str, Path], tmp_path: Path) -> None:
    plant = str(bundles["plant-floor"])
    with serving("--bundle", plant) as (address, process):
        assert get_json(address, "/api/v1/search?query=word+order")[0] == 200
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    [line] = [json.loads(text) for text in err.splitlines() if text.startswith("{")]
    assert line["tool"] == "knowledge_search" and line["principal"] is None
    assert set(line["words"]["query"]) == {"chars", "hmac"} and "word order" not in err
    log = tmp_path / "requests.jsonl"
    with serving("--bundle", plant, "--log", str(log), "--log-queries") as (address, process):
        assert get_json(address, "/api/v1/search?query=word+order")[0] == 200
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert "{" not in err
    [line] = [json.loads(text) for text in log.read_text(encoding="utf-8").splitlines()]
    assert line["words"] == {"query": {"chars": 10, "text": "word order"}}
