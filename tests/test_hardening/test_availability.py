"""Idle connections and a slowloris client cannot starve `handbook serve`: with 2,000
idle sockets held open and a client sending its headers a byte at a time, against a
server limited to 1,024 open files, a well-behaved client is still answered, without an
error, and the slow client is cut off. Latency is reported by bench/availability.py, not
asserted here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT

from handbook_build import load_config
from handbook_build.pipeline import build


def _bench() -> ModuleType:
    name = "handbook_bench_availability"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "availability.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("siege") / "bundle"
    build(load_config(ROOT / "examples" / "plant-floor" / "mkdocs.yml"), out, None)
    return out


def test_a_good_client_is_answered_under_siege(bundle: Path) -> None:
    bench = _bench()
    idle = bench.enough_files(2000)
    assert idle >= 1500, "this machine cannot hold enough sockets for the siege"
    with bench.serving(bundle, files=1024, header_timeout=2.0) as address:
        report = bench.siege(address, idle=idle, requests=10, deadline=120.0)
    print("\n[availability] " + "; ".join(report.lines()))
    assert report.errors == []
    assert len(report.latencies) == 10
    assert report.idle_opened == idle
    assert report.idle_closed_by_server > 0  # evicted or timed out, never left to pile up
    assert report.slowloris_closed_after is not None
