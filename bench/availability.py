"""Availability under a siege: idle sockets and a slowloris client against `handbook serve`.

A real `handbook serve` process on loopback, started with a low limit of open files (as
on many laptops and containers), is held by many idle connections that never send a
byte and by a slowloris client that sends its headers a byte at a time; meanwhile a
well-behaved client keeps asking. The server must answer the good client, close the
slow one, and not run out of descriptors. The test suite runs a small siege and asserts
only that nothing failed; this script runs a large one and reports the latency the good
client saw (machines are noisy: figures, not assertions).

    python bench/availability.py [--idle 2000] [--requests 50] [--files 1024]
"""

from __future__ import annotations

import argparse
import http.client
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Report:
    idle_opened: int = 0
    idle_closed_by_server: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    slowloris_closed_after: float | None = None

    def lines(self) -> list[str]:
        ms = sorted(x * 1000 for x in self.latencies)
        p50 = statistics.median(ms) if ms else float("nan")
        worst = ms[-1] if ms else float("nan")
        slow = (
            f"{self.slowloris_closed_after:.1f} s"
            if self.slowloris_closed_after is not None
            else "never"
        )
        return [
            f"idle sockets opened {self.idle_opened:,}, closed by the server {self.idle_closed_by_server:,}",
            f"good client: {len(ms)} answers, {len(self.errors)} errors, p50 {p50:.1f} ms, worst {worst:.1f} ms",
            f"slowloris client closed after {slow}",
        ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(bundle: Path, files: int, header_timeout: float) -> Iterator[tuple[str, int]]:
    """`handbook serve` for `bundle` with at most `files` open descriptors (soft and hard)."""
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from handbook.cli import main; main()",
            "serve",
            "--port",
            str(port),
            "--bundle",
            str(bundle),
            "--allow-unsigned",
            "--site",
            "no-site",
            "--header-timeout",
            str(header_timeout),
            "--rate-limit",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
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
                raise RuntimeError(f"serve did not start: {process.communicate()[1]}") from None
            time.sleep(0.05)
    try:
        yield address
    finally:
        process.kill()
        process.communicate()


def siege(address: tuple[str, int], idle: int, requests: int, deadline: float = 120.0) -> Report:
    """The siege, all of it within `deadline` seconds: a server that stops answering
    makes errors, never a hang."""
    report = Report()
    end = time.monotonic() + deadline

    def left() -> float:
        return max(end - time.monotonic(), 0.1)

    sockets: list[socket.socket] = []
    for _ in range(idle):
        try:
            sockets.append(socket.create_connection(address, timeout=left()))
        except OSError as exc:
            report.errors.append(f"idle connect: {exc}")
            break
        if time.monotonic() > end:
            report.errors.append(f"only {len(sockets)} idle sockets opened within {deadline:g} s")
            break
    report.idle_opened = len(sockets)
    slow_done = threading.Event()

    def slowloris() -> None:
        started = time.monotonic()
        try:
            with socket.create_connection(address, timeout=left()) as sock:
                sock.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while time.monotonic() < end:
                    sock.sendall(b"X")
                    time.sleep(0.25)
        except OSError:  # the server closed it: what should happen
            report.slowloris_closed_after = time.monotonic() - started
        finally:
            slow_done.set()

    thread = threading.Thread(target=slowloris, daemon=True)
    thread.start()
    for _ in range(requests):
        started = time.monotonic()
        conn = http.client.HTTPConnection(*address, timeout=left())
        try:
            conn.request("GET", "/api/v1/status")
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or b'"library"' not in body:
                report.errors.append(f"status {response.status}")
            else:
                report.latencies.append(time.monotonic() - started)
        except OSError as exc:
            report.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
    slow_done.wait(left())
    for sock in sockets:
        sock.setblocking(False)
        try:
            if sock.recv(1) == b"":
                report.idle_closed_by_server += 1
        except BlockingIOError:
            pass
        except OSError:
            report.idle_closed_by_server += 1
        sock.close()
    return report


def enough_files(wanted: int) -> int:
    """Raise this process's own soft limit for `wanted` sockets; the sockets it may open."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, wanted + 100), hard))
    return min(wanted, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--files", type=int, default=1024, help="the server's limit of open files")
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument("--bundle", type=Path, default=ROOT / "build" / "bundle")
    args = parser.parse_args()
    idle = enough_files(args.idle)
    with serving(args.bundle, args.files, args.header_timeout) as address:
        report = siege(address, idle, args.requests)
    print(
        f"siege of handbook serve ({args.files} files, header timeout {args.header_timeout:g} s):"
    )
    for line in report.lines():
        print(f"  {line}")
    for error in report.errors[:5]:
        print(f"  error: {error}")


if __name__ == "__main__":
    main()
