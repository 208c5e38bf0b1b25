"""One version rule for the build and the reader's update check (`handbook.bundle.semver`).

The ordering is checked against a reference written here from the text of SemVer
2.0.0 §11, on versions hypothesis makes, and on the specification's own example chain;
the grammar against a reference written from its BNF. Then the attacks on the update
check, against a real loopback server: `1.0.0+b2` with other bytes after `1.0.0` was
taken for a new version (the old parser saw them equal, the same-bytes rule compared
strings); `1.0` ranked above `1.0.0` and was read at all.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import string
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY, PUBLIC, ROOT, loopback_server
from hypothesis import given
from hypothesis import strategies as st

from handbook import FormatError, Library, RollbackError
from handbook.bundle.semver import MAX_LENGTH, Version, parse
from handbook_build import load_config
from handbook_build.config.settings import from_options
from handbook_build.errors import ConfigError, ReleaseError
from handbook_build.pipeline import build
from handbook_build.tasks.release import next_version

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
SPEC_CHAIN = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]
REFUSED = [
    "1.0",
    "1",
    "1.x.0",
    "01.0.0",
    "1.00.0",
    "1.0.00",
    "1.0.0-01",
    "1.0.0-",
    "1.0.0-a..b",
    "1.0.0-a.",
    "1.0.0+",
    "1.0.0+a..b",
    "1.0.0-a_b",
    "v1.0.0",
    " 1.0.0",
    "1.0.0\n",
    "1.0.0.0",
    "\uff11.0.0",  # a fullwidth digit: \d outside ASCII
    "1.0.0-\u00e9",
    "",
    "1.0.0-" + "a" * MAX_LENGTH,
]
ALNUM_HYPHEN = set(string.ascii_letters + string.digits + "-")


# -- the references, from the specification's text ------------------------------------------


def reference_compare(a: str, b: str) -> int:
    """SemVer 2.0.0 §11, step by step: -1, 0 or 1."""

    def split(v: str) -> tuple[list[int], list[str]]:
        core, _, pre = v.partition("+")[0].partition("-")
        return [int(n) for n in core.split(".")], pre.split(".") if pre else []

    def sign(x: Any, y: Any) -> int:
        return (x > y) - (x < y)

    (core_a, pre_a), (core_b, pre_b) = split(a), split(b)
    if core_a != core_b:  # §11.2: major, minor, patch, numerically
        return sign(core_a, core_b)
    if not pre_a or not pre_b:  # §11.3: a pre-release has lower precedence than its release
        return sign(not pre_a, not pre_b)
    for x, y in zip(pre_a, pre_b, strict=False):  # §11.4, identifier by identifier
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return sign(int(x), int(y))  # §11.4.1 numerically
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1  # §11.4.3 numeric below alphanumeric
        return sign(x, y)  # §11.4.2 lexically in ASCII order
    return sign(len(pre_a), len(pre_b))  # §11.4.4 a larger set ranks higher


def reference_valid(text: str) -> bool:
    """The BNF of semver.org, rule by rule."""
    rest, plus, build = text.partition("+")
    core, dash, pre = rest.partition("-")

    def number(n: str) -> bool:
        return n != "" and set(n) <= set(string.digits) and (n == "0" or n[0] != "0")

    def identifiers(part: str, numeric_rule: bool) -> bool:
        ids = part.split(".")
        if not all(i and set(i) <= ALNUM_HYPHEN for i in ids):
            return False
        return not numeric_rule or all(number(i) for i in ids if set(i) <= set(string.digits))

    parts = core.split(".")
    return (
        len(parts) == 3
        and all(number(n) for n in parts)
        and (not dash or identifiers(pre, numeric_rule=True))
        and (not plus or identifiers(build, numeric_rule=False))
    )


NUMBERS = st.one_of(st.integers(0, 3), st.integers(0, 10**30)).map(str)
ALNUM_IDS = st.text(alphabet="abAB-9z0", min_size=1, max_size=4).filter(lambda s: not s.isdigit())
PRE_IDS = st.lists(st.one_of(NUMBERS, ALNUM_IDS), max_size=4)
BUILD = st.lists(st.text(alphabet="a0-Z", min_size=1, max_size=3), max_size=2)


@st.composite
def versions(draw: st.DrawFn) -> str:
    core = ".".join(draw(st.lists(st.sampled_from(["0", "1", "2", "10"]), min_size=3, max_size=3)))
    pre, build_ids = draw(PRE_IDS), draw(BUILD)
    return (
        core
        + (f"-{'.'.join(pre)}" if pre else "")
        + (f"+{'.'.join(build_ids)}" if build_ids else "")
    )


# -- the ordering --------------------------------------------------------------------------


def test_the_specifications_example_chain_ascends() -> None:
    parsed = [parse(v) for v in SPEC_CHAIN]
    assert all(a < b for a, b in itertools.pairwise(parsed))
    assert sorted(reversed(parsed)) == parsed


@given(versions(), versions())
def test_the_order_is_the_specifications(a: str, b: str) -> None:
    expected = reference_compare(a, b)
    va, vb = parse(a), parse(b)
    assert ((va > vb) - (va < vb)) == expected
    assert (va == vb) == (expected == 0)
    if expected == 0:  # one version: one key in a dict or set
        assert hash(va) == hash(vb)


@given(versions(), BUILD)
def test_build_metadata_never_counts(text: str, build_ids: list[str]) -> None:
    plain = text.partition("+")[0]
    other = plain + (f"+{'.'.join(build_ids)}" if build_ids else "")
    assert parse(other) == parse(plain) and str(parse(other)) == other


@given(st.one_of(versions(), st.text(alphabet="0123456789.-+aZ_ \u0661", max_size=20)))
def test_the_parser_takes_exactly_the_grammar(text: str) -> None:
    try:
        parse(text)
    except ValueError:
        assert not reference_valid(text)
    else:
        assert reference_valid(text)


@pytest.mark.parametrize("text", REFUSED)
def test_the_build_and_the_reader_refuse_the_same_versions(text: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a semantic version like 1\.2\.0") as info:
        parse(text)
    assert repr(text[:MAX_LENGTH]) in str(info.value)
    (tmp_path / "docs").mkdir()
    with pytest.raises(ConfigError, match="is not a semantic version"):
        from_options({"library": "x", "version": text}, config_path=tmp_path / "mkdocs.yml")


def test_release_orders_and_bumps_with_the_same_parser() -> None:
    assert next_version("1.2.3-rc.1", "patch") == "1.2.3"
    assert next_version("1.2.3+b7", "minor") == "1.3.0"
    with pytest.raises(ReleaseError, match=r"the current version '1\.0' is not a semantic"):
        next_version("1.0", "patch")
    assert Version(1, 0, 0, (), ("b2",)) == parse("1.0.0")


# -- the update check ----------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    """GET /<site>/<file> from `sites`."""

    sites: ClassVar[dict[str, dict[str, bytes]]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site, _, name = self.path.lstrip("/").partition("/")
        data = self.sites.get(site, {}).get(name)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Sites named for the version their bundle carries, each signed with `KEY` (the
    build's own check is bypassed for `1.0` and `1.x.0`, as a foreign tool would)."""
    base = tmp_path_factory.mktemp("versions")
    config = load_config(EXAMPLE)
    sites = {}
    for version in ("1.0.0", "1.0.0+b2", "1.0.0-rc.1", "1.0", "1.x.0", "1.1.0"):
        out = base / version
        build(dataclasses.replace(config, version=version), out, KEY)
        root = Path(os.path.realpath(out))
        sites[version] = {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }
    with loopback_server(type("Sites", (Handler,), {"sites": sites})) as url:
        yield url


def open_version(server: str, version: str, state: Path) -> Library:
    return Library.open(
        f"{server}/{version}", [PUBLIC], cache_dir=state / "cache", state_dir=state / "state"
    )


def test_the_same_version_with_build_metadata_and_other_bytes_is_refused(
    server: str, tmp_path: Path
) -> None:
    assert open_version(server, "1.0.0", tmp_path).version == "1.0.0"
    with pytest.raises(
        RollbackError, match=r"1\.0\.0\+b2 was already accepted with other contents \(as 1\.0\.0:"
    ):
        open_version(server, "1.0.0+b2", tmp_path)
    with pytest.raises(RollbackError, match=r"1\.0\.0-rc\.1 is older than 1\.0\.0"):
        open_version(server, "1.0.0-rc.1", tmp_path)
    assert open_version(server, "1.0.0", tmp_path).version == "1.0.0"  # same bytes: fine
    assert open_version(server, "1.1.0", tmp_path).version == "1.1.0"


@pytest.mark.parametrize("version", ["1.0", "1.x.0"])
def test_a_version_the_build_refuses_is_refused_by_the_reader(
    server: str, tmp_path: Path, version: str
) -> None:
    open_version(server, "1.0.0", tmp_path)
    with pytest.raises(FormatError, match=rf"signed\.version {version!r} is not a semantic"):
        open_version(server, version, tmp_path)
    with pytest.raises(FormatError, match="is not a semantic version"):  # with no mark too
        open_version(server, version, tmp_path / "fresh")


def test_a_mark_the_reader_cannot_order_fails_closed(server: str, tmp_path: Path) -> None:
    open_version(server, "1.0.0", tmp_path)
    state = tmp_path / "state" / "highwater.json"
    marks = json.loads(state.read_text(encoding="utf-8"))
    for mark in marks.values():
        mark["version"] = "1.0"  # as an older reader could have stored it
    state.write_text(json.dumps(marks), encoding="utf-8")
    with pytest.raises(RollbackError, match=r"high-water mark for plant-floor is unusable"):
        open_version(server, "1.1.0", tmp_path)
