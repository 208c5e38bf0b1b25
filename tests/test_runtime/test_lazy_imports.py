"""What a process that opens a bundle and answers one search imports: not the modules
only other calls need (an agent's process starts for one question), and the time parser
that replaced strptime answers exactly as strptime does."""

from __future__ import annotations

import calendar
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import PUBLIC, ROOT

from handbook.bundle.manifest import TIME_FORMAT, utc_seconds

DEFERRED = (
    "calendar",
    "_strptime",
    "uuid",
    "handbook.bundle.publish_report",
    "urllib.request",
    "handbook.tools.table",
    "handbook.libraries.client",
    "handbook.libraries.shelf",
    *(f"handbook.handlers.{name}" for name in ("ask", "briefing", "collect")),
)
"""Imported by no open and no first search: time parsing (strptime), correlation ids
(remote calls), the publish report (status), the network (remote bundles), the tool
table (tool definitions), the remote client and the shelf (the package's other names,
imported when first used), and the handlers of the other tools."""


def test_a_first_search_does_not_import_what_it_does_not_use(plant_floor_bundle: Path) -> None:
    script = (
        "import json, sys\n"
        "from handbook import Library\n"
        "lib = Library.open(sys.argv[1], trusted_keys=[sys.argv[2]])\n"
        "hits = lib.search('modbus', limit=3)['hits']\n"
        "print(json.dumps([len(hits), sorted(sys.modules)]))\n"
    )
    hits, modules = _run(script, str(plant_floor_bundle), PUBLIC)
    assert hits > 0
    assert [m for m in DEFERRED if m in modules] == []


def test_the_package_gives_every_public_name_when_first_asked() -> None:
    script = (
        "import json, handbook\n"
        "names = sorted(handbook.__all__)\n"
        "print(json.dumps([names, [n for n in names if getattr(handbook, n, None) is None],"
        " sorted(set(dir(handbook)) & set(names))]))\n"
    )
    names, missing, listed = _run(script)
    assert {"Library", "RemoteLibrary", "Shelf", "SearchAnswer", "TrustPolicy"} <= set(names)
    assert missing == []
    assert listed == names
    import handbook

    try:
        handbook.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
    from handbook.libraries.library import Library

    assert handbook.Library is Library


def _run(script: str, *args: str) -> Any:
    """What `script`, run by a fresh interpreter on this tree's packages, prints as JSON."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "runtime"), str(ROOT / "plugins")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=True
    ).stdout
    return json.loads(out)


def _strptime(text: str) -> int | None:
    try:
        return calendar.timegm(time.strptime(text, TIME_FORMAT))
    except ValueError:
        return None


def test_bundle_times_are_read_as_strptime_reads_them() -> None:
    rnd = random.Random(29)
    cases = [
        "2026-02-29T00:00:00Z",
        "2024-02-29T12:00:00Z",
        "1900-02-29T00:00:00Z",
        "2000-02-29T00:00:00Z",
        "2026-01-31T24:00:00Z",
        "2026-1-1T1:1:1Z",
        "0000-01-01T00:00:00Z",
        "2026-12-31T23:59:60Z",
        "2026-12-31T23:59:61Z",
        "2026-12-31T23:59:62Z",
        "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z",
        "2026-01-31T12:00:00",
        "\uff12\uff10\uff12\uff16-01-31T12:00:00Z",
    ]
    for _ in range(5000):
        year = rnd.choice([rnd.randint(1, 9999), rnd.randint(1965, 2105)])
        month, day = rnd.randint(0, 13), rnd.randint(0, 32)
        hour, minute, second = rnd.randint(0, 25), rnd.randint(0, 61), rnd.randint(0, 62)
        cases.append(f"{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
    for text in cases:
        assert utc_seconds(text) == _strptime(text), text
