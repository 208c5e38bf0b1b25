"""Measure what a remote open transfers: lazy (issue 20) beside eager, on msdocs-10k.

The msdocs-10k bundle is built fresh with `handbook build` (as `runtime_bench.py` does),
then served from its folder by a stdlib HTTP server on loopback that counts every body
byte it sends. Each scenario starts from an empty download cache and a fresh version
mark, in this process (imports done before the clock starts):

* **lazy search**: `Library.open(url)` then one `search`;
* **lazy get**: `Library.open(url)` then one `get` of a doc id;
* **lazy search, then get** of the first hit;
* **lazy, warm cache**: the search again after a first session filled the cache;
* **eager search**: `Library.open(url, lazy=False)` (every file first) then one `search`.

For each: the bytes sent (and as a share of the bundle's bytes: the manifest plus every
listed file), the files fetched, and the time from `Library.open` to the first answer.
With `--objects` the server also publishes every file at `objects/<sha256>` (the
immutable layout; the reader then fetches from there). With `--gzip` it sends files
gzip-compressed to a reader that accepts it (the reader does), as CDNs and
`handbook serve` do: bytes transferred are then the compressed bytes. The server
answers a single HTTP `Range` with 206 and that range (uncompressed), as CDNs and object
stores do, so a reader that asks for ranges (issue 29: files with chunk hashes) gets
them; `--no-ranges` has it ignore `Range` and send whole files.

    python bench/remote_bench.py [--query "virtual network"] [--objects] [--gzip]
        [--no-ranges] [--no-eager] [--bundle FOLDER] [--json OUT]

`--no-eager` leaves out the eager scenario (at 100,000 docs it is 100,000 requests).

Only the standard library and Handbook are used. Loopback only: the times say nothing
about a real network's latency, the bytes are what a real network would carry.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from build_bench import keyfile
from check_throughput import environment, msdocs
from runtime_bench import build_bundle

from handbook import Library
from handbook.bundle.layout import MANIFEST
from handbook.bundle.signing import load_private_key, public_key_of


class Counting(BaseHTTPRequestHandler):
    """GET /<path> from `root` (and `objects/<sha256>` from `objects`), counting bytes.
    With `compress`, as a CDN does: gzip (level 6, made once per file) to a client that
    accepts it, unless that saves less than a tenth."""

    root: ClassVar[Path]
    objects: ClassVar[dict[str, str]] = {}
    log: ClassVar[list[tuple[str, int]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()
    compress: ClassVar[bool] = False
    ranges: ClassVar[bool] = True
    packed: ClassVar[dict[str, bytes | None]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        name = shown = self.path.lstrip("/")
        if name.startswith("objects/"):
            name = self.objects.get(name.removeprefix("objects/"), "\0")
            shown = f"{name} (as {shown[:16]}…)"
        path = self.root / name
        if "\0" in name or ".." in name.split("/") or not path.is_file():
            with self.lock:
                self.log.append((self.path, 0))
            self.send_error(404)
            return
        asked = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
        if self.ranges and asked is not None:
            self.send_range(path, shown, int(asked[1]), int(asked[2]))
            return
        data = path.read_bytes()
        packed = None
        if self.compress and "gzip" in self.headers.get("Accept-Encoding", ""):
            if name not in self.packed:
                made = gzip.compress(data, compresslevel=6, mtime=0)
                self.packed[name] = made if len(made) < 0.9 * len(data) else None
            packed = self.packed[name]
        if packed is not None:
            data = packed
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        if packed is not None:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)
        with self.lock:
            self.log.append((shown, len(data)))

    def send_range(self, path: Path, shown: str, first: int, last: int) -> None:
        """206 with bytes `first` to `last` of `path`, read alone (as a file server
        does); 416 when they are not in the file."""
        size = path.stat().st_size
        if not first <= last < size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with path.open("rb") as fh:
            fh.seek(first)
            data = fh.read(last + 1 - first)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)
        with self.lock:
            self.log.append((f"{shown} [{first}-{last}]", len(data)))


@contextlib.contextmanager
def serving(
    bundle: Path, objects: bool, compress: bool = False, ranges: bool = True
) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """A counting server for `bundle` on loopback: its URL and its request log."""
    handler = type(
        "Handler",
        (Counting,),
        {
            "root": bundle,
            "log": [],
            "objects": {},
            "compress": compress,
            "ranges": ranges,
            "packed": {},
        },
    )
    if objects:
        handler.objects = {sha: name for name, (sha, _) in every_file(bundle).items()}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.log
    finally:
        httpd.shutdown()
        httpd.server_close()


def every_file(bundle: Path) -> dict[str, tuple[str, int]]:
    """Every file but the manifest -> (sha256, bytes): those the manifest lists, and
    (handbook/v2) the content and attached files, named by their sha256."""
    signed = json.loads((bundle / MANIFEST).read_bytes())["signed"]
    out = {name: (entry["sha256"], entry["bytes"]) for name, entry in signed["files"].items()}
    for folder in ("content", "resources"):
        for path in sorted((bundle / folder).iterdir()) if (bundle / folder).is_dir() else ():
            out[f"{folder}/{path.name}"] = (path.name.removesuffix(".md"), path.stat().st_size)
    return out


def bundle_bytes(bundle: Path) -> tuple[int, dict[str, int]]:
    sizes = {name: size for name, (_, size) in every_file(bundle).items()}
    return (bundle / MANIFEST).stat().st_size + sum(sizes.values()), sizes


def scenario(
    url: str,
    log: list[tuple[str, int]],
    work: Path,
    key: str,
    steps: list[tuple[str, Any]],
    **options: Any,
) -> dict[str, Any]:
    """Open `url` and run `steps` ((tool, argument) pairs; an argument None takes the
    first hit's doc id of the previous search); bytes and files of the whole session."""
    log.clear()
    started = time.perf_counter()
    lib = Library.open(url, [key], cache_dir=work / "cache", state_dir=work / "state", **options)
    opened = time.perf_counter() - started
    first: float | None = None
    answers = []
    hit: str | None = None
    for tool, argument in steps:
        if tool == "search":
            answer = lib.search(argument, limit=10)
            hits = answer.get("hits") or []
            hit = hits[0].get("id") if hits else None
        else:
            answer = lib.get(argument if argument is not None else hit)
        if "error" in answer:
            raise SystemExit(f"{tool}({argument!r}) failed: {answer['error']}")
        answers.append(answer)
        if first is None:
            first = time.perf_counter() - started
    fetched: dict[str, int] = {}  # the ranges of one file summed
    for path, size in log:
        if size:
            name = path.lstrip("/").split(" [")[0]
            fetched[name] = fetched.get(name, 0) + size
    return {
        "open_s": opened,
        "first_answer_s": first,
        "bytes": sum(fetched.values()),
        "requests": len(log),
        "ranges": sum(1 for path, _ in log if path.endswith("]")),
        "files": sorted(fetched.items(), key=lambda f: -f[1]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--query", default="virtual network gateway")
    parser.add_argument("--objects", action="store_true", help="also publish objects/<sha256>")
    parser.add_argument(
        "--gzip",
        action="store_true",
        help="serve files gzip-compressed to clients that accept it, as a CDN or "
        "`handbook serve` does",
    )
    parser.add_argument(
        "--no-ranges", action="store_true", help="ignore HTTP Range: send whole files (200)"
    )
    parser.add_argument("--no-eager", action="store_true", help="leave out the eager open")
    parser.add_argument("--bundle", type=Path, help="an already built bundle folder")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    if args.bundle is not None:
        bundle = args.bundle.resolve()
    else:
        config = msdocs()
        if config is None:
            print("the msdocs-10k archive was not found", file=sys.stderr)
            return 1
        print("building msdocs-10k", file=sys.stderr)
        bundle, _ = build_bundle("msdocs-10k", config)
    key = str(public_key_of(load_private_key(keyfile().read_bytes())))
    total, sizes = bundle_bytes(bundle)
    catalog = json.loads((bundle / "catalog.json").read_bytes())
    doc_id = catalog["docs"][len(catalog["docs"]) // 2]["id"]
    del catalog

    plans: list[tuple[str, list[tuple[str, Any]], dict[str, Any]]] = [
        ("lazy: one search", [("search", args.query)], {}),
        ("lazy: one get", [("get", doc_id)], {}),
        ("lazy: one search, then get its first hit", [("search", args.query), ("get", None)], {}),
        ("eager: one search", [("search", args.query)], {"lazy": False}),
    ]
    if args.no_eager:
        plans = [plan for plan in plans if not plan[0].startswith("eager")]
    results: dict[str, Any] = {}
    with (
        serving(bundle, args.objects, args.gzip, not args.no_ranges) as (url, log),
        tempfile.TemporaryDirectory() as tmp,
    ):
        for label, steps, options in plans:
            work = Path(tmp) / hashlib.sha256(label.encode()).hexdigest()[:8]
            results[label] = scenario(url, log, work, key, steps, **options)
            if label == "lazy: one search":  # the same session again: the cache is warm
                results["lazy: one search, warm cache"] = scenario(url, log, work, key, steps)
            shutil.rmtree(work, ignore_errors=True)

    print(f"\n{environment()}; bundle {bundle} ({total:,} bytes, {len(sizes):,} files)")
    print(
        f"query {args.query!r}, get {doc_id!r}, layout {'objects' if args.objects else 'plain'}"
        f", {'gzip' if args.gzip else 'identity'} transfers"
        f", ranges {'ignored' if args.no_ranges else 'honoured'}\n"
    )
    print(
        "| scenario | bytes transferred | of the bundle | requests (of them ranges) | open ms "
        "| first answer ms |"
    )
    print("|---|--:|--:|--:|--:|--:|")
    for label, r in results.items():
        print(
            f"| {label} | {r['bytes']:,} | {100 * r['bytes'] / total:.1f} % | {r['requests']:,} "
            f"({r['ranges']:,}) | {1000 * r['open_s']:,.0f} "
            f"| {1000 * (r['first_answer_s'] or 0):,.0f} |"
        )
    for label, r in results.items():
        if label.startswith("lazy"):
            top = ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in r["files"][:4])
            more = len(r["files"]) - 4
            print(f"\n{label}: {top}" + (f" and {more} more files" if more > 0 else ""))
    if args.json is not None:
        args.json.write_text(
            json.dumps({"total_bytes": total, "results": results}, indent=2), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
