"""Crash-consistent publishing: `handbook build` killed with SIGKILL at random moments,
and at each step of `seal.publish` by fault injection.

After every kill the published location must be exactly one of: absent (only while no
build has ever completed), the version published before, or the complete new version,
never a half-written or mixed bundle; `open_bundle(..., hash_all=True)` checks every
byte. Leftovers of killed builds (``.tmp-*`` folders in ``OUT.versions``, ``.OUT.link-*``
symlinks, a half-removed old version) may remain after a kill; the next completed build
removes them and keeps exactly the new version and the previous one.

The random run is deterministic for a seed (delays and sources), though where each kill
lands depends on the machine's speed: each kill is classified from what it left behind.

    HANDBOOK_CRASH_RUNS=200 HANDBOOK_CRASH_SEED=7 pytest tests/test_hardening/test_crash_publish.py
    python bench/hardening_long.py crash --runs 200

Each build gets its own `SOURCE_DATE_EPOCH`, so every build is a distinct version (an
identical rebuild reuses its folder; that path has a test of its own below).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import KEY_PEM, PUBLIC, ROOT

from handbook.bundle.local import open_bundle
from handbook.errors import BundleError

EXAMPLE = ROOT / "examples" / "plant-floor"
HANDBOOK = str(Path(sys.executable).parent / "handbook")
MARKED_DOC = "protocol.modbus"
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z; run n builds with EPOCH + n

CRASH_RUNS = int(os.environ.get("HANDBOOK_CRASH_RUNS", "25"))
CRASH_SEED = int(os.environ.get("HANDBOOK_CRASH_SEED", "20261129"))

VERSIONS = {"1.0.0": "alpha", "2.0.0": "bravo", "3.0.0": "charlie"}
"""version -> the marker its sources add to the Modbus doc."""


# -- sources and builds -------------------------------------------------------------------


def write_sources(root: Path, version: str) -> Path:
    """The example library at `version`, with a marked section in one doc; its mkdocs.yml."""
    shutil.copytree(EXAMPLE, root)
    config = root / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    assert "version: 1.0.0" in text
    config.write_text(text.replace("version: 1.0.0", f"version: {version}"), encoding="utf-8")
    doc = root / "docs" / "protocols" / "modbus.md"
    doc.write_text(
        doc.read_text(encoding="utf-8")
        + f"\n## Edition\n\nThis is the {VERSIONS[version]} edition.\n",
        encoding="utf-8",
    )
    return config


def all_sources(root: Path) -> dict[str, Path]:
    return {version: write_sources(root / f"src-{version}", version) for version in VERSIONS}


def child_env(epoch: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SOURCE_DATE_EPOCH", "HANDBOOK_SIGNING_KEY")
    }
    env["HANDBOOK_SIGNING_KEY"] = KEY_PEM
    env["SOURCE_DATE_EPOCH"] = str(epoch)
    return env


def build_args(config: Path, out: Path) -> list[str]:
    return ["build", "--config", str(config), "--out", str(out)]


def run_build(
    config: Path, out: Path, epoch: int, harness: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A build run to its end (or to the harness's self-kill)."""
    command = [*(harness or [HANDBOOK]), *build_args(config, out)]
    return subprocess.run(
        command, env=child_env(epoch), capture_output=True, text=True, timeout=120, check=False
    )


def versions_of(out: Path) -> Path:
    return out.parent / f"{out.name}.versions"


@dataclass(frozen=True)
class Snapshot:
    """What is on disk around `out`: its target, the version folders, the leftovers."""

    target: str | None
    folders: frozenset[str]
    tmp: frozenset[str]
    links: frozenset[str]

    @classmethod
    def take(cls, out: Path) -> Snapshot:
        versions = versions_of(out)
        names = set(os.listdir(versions)) if versions.is_dir() else set()
        links = {n for n in os.listdir(out.parent) if n.startswith(f".{out.name}.link-")}
        target = Path(os.readlink(out)).name if out.is_symlink() else None
        return cls(
            target,
            frozenset(n for n in names if not n.startswith(".")),
            frozenset(n for n in names if n.startswith(".tmp-")),
            frozenset(links),
        )

    @property
    def leftovers(self) -> list[str]:
        """Anything a completed build must have removed: temporary folders, links, and
        version folders beyond the served one and the one before it (counted by the caller)."""
        return sorted(self.tmp | self.links)


def published(out: Path) -> tuple[str | None, str | None, str | None]:
    """(target folder name, version, problem) of what `out` publishes; (None, None, None)
    when nothing is there. The bundle is opened as a reader would, every byte hashed, and
    its marked doc must carry the marker of the version its manifest names."""
    if not os.path.lexists(out):
        return None, None, None
    if not out.is_symlink():
        return None, None, f"{out} is not a symlink"
    name = Path(os.readlink(out)).name
    if Path(os.path.realpath(out)).parent != Path(os.path.realpath(versions_of(out))):
        return name, None, f"{out} points outside {versions_of(out).name}: {os.readlink(out)}"
    try:
        bundle = open_bundle(out, [PUBLIC], hash_all=True)
        version = bundle.manifest.signed.version
        doc = next(d for d in bundle.catalog.docs if d.id == MARKED_DOC)
        text = bundle.read(doc.content).decode("utf-8")
    except (BundleError, OSError, StopIteration) as exc:
        return name, None, f"{out} -> {name} does not verify: {type(exc).__name__}: {exc}"
    marker = VERSIONS.get(version)
    if marker is None or f"the {marker} edition" not in text:
        return (
            name,
            version,
            f"{out} -> {name}: version {version} with the content of another version",
        )
    return name, version, None


# -- the random kill run ------------------------------------------------------------------


STAGES = (
    "before staging",  # start-up, imports, check, cleaning old leftovers
    "writing or verifying",  # a .tmp-* folder is left
    "renamed, not swapped",  # the new version folder is complete, OUT not yet moved
    "link made, not swapped",  # the .OUT.link-* symlink is left
    "swapped, not finished",  # OUT points at the new version; killed in pruning or exit
)
MID_PUBLISH = STAGES[1:]


@dataclass
class CrashFigures:
    runs: int = 0
    kills: int = 0
    completed: int = 0
    """Builds that finished: random runs whose kill came too late, and the clean-up builds."""
    stages: Counter[str] = field(default_factory=Counter)
    checks: int = 0
    complete: int = 0
    """Checks after which the published location was a complete bundle of an allowed
    version (or absent while no build had completed)."""
    absent: int = 0
    leftovers_left: int = 0
    """Kills that left something behind: a `.tmp-*` folder, a link, a version folder
    nothing points at, an old version not (or half) pruned."""
    leftovers_cleaned: int = 0
    """Of those, the kills whose leftovers were all gone after the next completed build."""
    build_seconds: float = 0.0
    stage_seconds: float = 0.0
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)

    @property
    def mid_publish(self) -> int:
        return sum(self.stages[s] for s in MID_PUBLISH)

    def lines(self) -> list[str]:
        stages = ", ".join(f"{s}: {self.stages[s]}" for s in STAGES)
        return [
            f"runs {self.runs}: {self.kills} killed, {self.runs - self.kills} finished before their kill; "
            f"typical build {self.build_seconds:.3f} s, staging from {self.stage_seconds:.3f} s",
            f"kills by stage: {stages}",
            f"kills that hit mid-publish (staging started, build not finished): {self.mid_publish}/{self.kills}",
            f"complete bundles found: {self.complete}/{self.checks} checks "
            f"({self.absent} absent before any build completed)",
            f"kills that left leftovers: {self.leftovers_left}; all removed by the next completed build: "
            f"{self.leftovers_cleaned}/{self.leftovers_left} ({self.completed} completed builds)",
            f"violations: {len(self.violations)}; {self.seconds:.1f} s",
        ]


def calibrate(work: Path, config: Path, builds: int = 3) -> tuple[float, float]:
    """(typical build time, when staging starts): the median of `builds` complete builds
    after one to warm the caches, and the moment a `.tmp-*` folder appears in two more,
    watched from outside (the watching slows a build down, so only its fraction of the
    build's time is kept)."""
    out = work / "calibration" / "bundle"
    out.parent.mkdir(parents=True)
    assert run_build(config, out, EPOCH - 100).returncode == 0, "a calibration build failed"
    totals, fractions = [], []
    for n in range(builds):
        started = time.perf_counter()
        run_build(config, out, EPOCH - 99 + n)
        totals.append(time.perf_counter() - started)
    for n in range(2):
        before = Snapshot.take(out)
        started = time.perf_counter()
        staged = None
        with subprocess.Popen(
            [HANDBOOK, *build_args(config, out)],
            env=child_env(EPOCH - 90 + n),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as child:
            while child.poll() is None:
                if staged is None:
                    now = Snapshot.take(out)
                    if now.tmp - before.tmp or now.folders - before.folders:
                        staged = time.perf_counter() - started
                time.sleep(0.001)
        fractions.append((staged or 0.0) / (time.perf_counter() - started) or 0.75)
    shutil.rmtree(out.parent)
    typical = statistics.median(totals)
    return typical, typical * statistics.median(fractions)


def classify(before: Snapshot, after: Snapshot) -> str:
    if after.target != before.target:
        return "swapped, not finished"
    if after.links - before.links:
        return "link made, not swapped"
    if after.folders - before.folders:
        return "renamed, not swapped"
    if after.tmp - before.tmp:
        return "writing or verifying"
    return "before staging"


def crash_campaign(
    work: Path, runs: int, seed: int, clean_every: int = 5, log: Callable[[str], None] | None = None
) -> CrashFigures:
    """`runs` builds, alternating two versions of the sources, each SIGKILLed after a
    seeded random delay in [0, typical build time] (half of them drawn from the part of
    the build where it writes and publishes); after every `clean_every` runs, and at the
    end, a build that completes. Every state left behind is checked."""
    figures = CrashFigures()
    started = time.perf_counter()
    sources = all_sources(work)
    order = ["1.0.0", "2.0.0"]
    figures.build_seconds, figures.stage_seconds = calibrate(work, sources[order[0]])
    total, staging = figures.build_seconds, min(figures.stage_seconds, figures.build_seconds)
    rng = random.Random(seed)
    out = work / "site" / "bundle"
    out.parent.mkdir()

    def check(before: Snapshot, version: str, completed: bool, what: str) -> Snapshot:
        after = Snapshot.take(out)
        figures.checks += 1
        name, got, problem = published(out)
        if problem is None and name is None and before.target is not None:
            problem = f"{out} vanished; it pointed at {before.target}"
        if problem is None and name is not None and name != before.target:
            if got != version:
                problem = (
                    f"{out} -> {name} is version {got}, "
                    f"neither the previous one ({before.target}) nor the new {version}"
                )
            elif name in before.folders:
                problem = f"{out} -> {name}, an old folder, not a new version"
        if problem is None and completed:
            if name is None or got != version:
                problem = f"a completed build of {version} left {out} -> {name} ({got})"
            elif after.leftovers or after.folders != {name, before.target} - {None}:
                problem = (
                    f"a completed build left leftovers {after.leftovers} or versions "
                    f"{sorted(after.folders)} (expected {sorted({name, before.target} - {None})})"
                )
        if problem is None:
            figures.complete += 1
            figures.absent += name is None
        else:
            figures.violations.append(f"{what}: {problem}")
        return after

    pending: dict[int, set[str]] = {}
    """Kill number -> what it left behind, until a build completes."""

    def completed(before: Snapshot, version: str, what: str) -> Snapshot:
        figures.completed += 1
        after = check(before, version, True, what)
        present = after.tmp | after.links | after.folders
        figures.leftovers_cleaned += sum(not (left & present) for left in pending.values())
        pending.clear()
        return after

    def complete_build(n: int, version: str) -> None:
        before = Snapshot.take(out)
        result = run_build(sources[version], out, EPOCH + 1_000_000 + n)
        if result.returncode != 0:
            figures.completed += 1
            figures.violations.append(
                f"clean-up build {n} ({version}) failed: {result.stderr.strip()[-500:]}"
            )
            return
        completed(before, version, f"clean-up build {n}")

    for n in range(runs):
        version = order[n % 2]
        delay = rng.uniform(0.0, total) if rng.random() < 0.5 else rng.uniform(staging * 0.9, total)
        before = Snapshot.take(out)
        launched = time.perf_counter()
        with subprocess.Popen(
            [HANDBOOK, *build_args(sources[version], out)],
            env=child_env(EPOCH + n),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as child:
            time.sleep(max(0.0, launched + delay - time.perf_counter()))
            killed = child.poll() is None
            if killed:
                child.send_signal(signal.SIGKILL)
            _, stderr = child.communicate()
        figures.runs += 1
        if child.returncode not in (0, -signal.SIGKILL):
            figures.violations.append(
                f"run {n} ({version}) exited {child.returncode}: {stderr.strip()[-500:]}"
            )
            continue
        if child.returncode == 0:  # the kill came after the end: a completed build
            after = completed(before, version, f"run {n} ({version}, finished in {delay:.3f} s)")
        else:
            figures.kills += 1
            after = check(before, version, False, f"run {n} ({version}, killed at {delay:.3f} s)")
            figures.stages[classify(before, after)] += 1
            # new temporary folders and links, and version folders beyond the served one
            # and the one before it (a new folder not swapped in, an old one not pruned)
            extra = (
                after.folders - {after.target, before.target} if len(after.folders) > 2 else set()
            )
            left = (
                (after.tmp - before.tmp)
                | (after.links - before.links)
                | (after.folders - before.folders - {after.target})
                | extra
            )
            if left:
                figures.leftovers_left += 1
                pending[n] = set(left)
        if log is not None:
            log(
                f"run {n}: {version} {'killed' if child.returncode else 'finished'} at {delay:.3f} s -> "
                f"{after.target} ({len(after.folders)} versions, {len(after.leftovers)} leftovers)"
            )
        if (n + 1) % clean_every == 0 and n + 1 < runs:
            complete_build(n, order[(n + 1) % 2])
    complete_build(runs, order[runs % 2])
    figures.seconds = time.perf_counter() - started
    return figures


def test_random_sigkill_never_leaves_a_broken_or_mixed_bundle(tmp_path: Path) -> None:
    figures = crash_campaign(tmp_path, CRASH_RUNS, CRASH_SEED)
    print("\n".join(figures.lines()))
    assert not figures.violations, "\n".join(figures.violations[:10])
    assert figures.runs == CRASH_RUNS and figures.complete == figures.checks
    assert figures.leftovers_cleaned == figures.leftovers_left
    assert figures.kills > 0, "no build was killed: the delays are longer than the builds"


# -- a kill at each step of publishing, by fault injection -------------------------------


HARNESS = r"""
import os, shutil, signal, sys

import handbook_build.write.seal as seal

point, args = sys.argv[1], sys.argv[2:]


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def from_seal():
    return sys._getframe(2).f_globals.get("__name__") == "handbook_build.write.seal"


def after(module, name):
    original = getattr(module, name)

    def wrapper(*a, **k):
        result = original(*a, **k)
        if from_seal():
            die()
        return result

    setattr(module, name, wrapper)


def before(module, name):
    original = getattr(module, name)

    def wrapper(*a, **k):
        if from_seal():
            die()
        return original(*a, **k)

    setattr(module, name, wrapper)


if point == "before-seal":  # content written, no manifest yet
    seal.BundleWriter.seal = lambda *a, **k: die()
elif point == "before-sync":  # manifest written, not yet flushed
    before(os, "sync")
elif point == "verifying":  # sealed, being verified
    seal.open_bundle = lambda *a, **k: die()
elif point == "after-rename":  # the version folder complete, OUT not moved
    after(os, "rename")
elif point == "after-symlink":  # the new link made beside OUT, not renamed over it
    after(os, "symlink")
elif point == "after-replace":  # OUT swapped, nothing pruned yet
    after(os, "replace")
elif point == "mid-prune":  # the first old version half removed
    rmtree = shutil.rmtree

    def half(path, *a, **k):
        if sys._getframe(1).f_code.co_name == "_prune":
            victim = min((p for p in os.scandir(path) if p.is_file()), key=lambda p: p.name)
            os.unlink(victim.path)
            die()
        return rmtree(path, *a, **k)

    shutil.rmtree = half
else:
    raise SystemExit(f"unknown point {point}")

from handbook.cli import main

sys.argv = ["handbook", *args]
main()
"""

POINTS = {
    "before-seal": ("previous", ".tmp"),
    "before-sync": ("previous", ".tmp"),
    "verifying": ("previous", ".tmp"),
    "after-rename": ("previous", "orphan version"),
    "after-symlink": ("previous", "link"),
    "after-replace": ("new", "unpruned version"),
    "mid-prune": ("new", "half-removed version"),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return all_sources(tmp_path_factory.mktemp("sources"))


@pytest.fixture(scope="module")
def two_published(tmp_path_factory: pytest.TempPathFactory, sources: dict[str, Path]) -> Path:
    """A folder where 1.0.0 then 2.0.0 were published (`bundle` and its versions), built
    once and copied by each test (the link is relative, so the copy stands alone)."""
    site = tmp_path_factory.mktemp("published")
    for n, version in enumerate(("1.0.0", "2.0.0")):
        assert run_build(sources[version], site / "bundle", EPOCH + n).returncode == 0
    return site


@pytest.mark.parametrize("point", list(POINTS))
def test_a_kill_at_each_publish_step(
    tmp_path: Path, sources: dict[str, Path], two_published: Path, point: str
) -> None:
    """Two versions published, then a third build killed at `point`: the location serves
    the previous or the new version as the step implies, whole; the leftover is the one
    the step implies; the next completed build removes it."""
    expected_target, leftover = POINTS[point]
    shutil.copytree(two_published, tmp_path / "site", symlinks=True)
    out = tmp_path / "site" / "bundle"
    before = Snapshot.take(out)
    assert published(out)[1:] == ("2.0.0", None)
    assert len(before.folders) == 2 and before.target is not None

    result = run_build(
        sources["3.0.0"], out, EPOCH + 2, harness=[sys.executable, "-c", HARNESS, point]
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    name, version, problem = published(out)
    assert problem is None, problem
    after = Snapshot.take(out)
    if expected_target == "previous":
        assert (name, version) == (before.target, "2.0.0")
    else:
        assert version == "3.0.0" and name not in before.folders
    new = after.folders - before.folders
    if leftover == ".tmp":
        assert len(after.tmp) == 1 and not new and not after.links
    elif leftover == "orphan version":
        assert len(new) == 1 and name not in new and not after.tmp and not after.links
    elif leftover == "link":
        assert len(after.links) == 1 and len(new) == 1 and not after.tmp
    elif leftover == "unpruned version":
        assert after.folders == before.folders | {name} and not after.tmp and not after.links
    else:  # one old version partly removed: not a bundle any more, and not served
        old = sorted(before.folders - {before.target})[0]
        assert after.folders == before.folders | {name}
        with pytest.raises(BundleError):
            open_bundle(versions_of(out) / old, [PUBLIC], hash_all=True)

    result = run_build(sources["1.0.0"], out, EPOCH + 3)
    assert result.returncode == 0, result.stderr
    final, version, problem = published(out)
    assert problem is None and version == "1.0.0"
    clean = Snapshot.take(out)
    assert not clean.leftovers
    assert clean.folders == {final, name}, (
        "only the new version and the one served before it are kept"
    )


def test_a_reproducible_rebuild_after_a_kill_in_prune_publishes_a_whole_bundle(
    tmp_path: Path, sources: dict[str, Path]
) -> None:
    """With one SOURCE_DATE_EPOCH (reproducible builds), versions A, B, C are built; C's
    build is killed while it prunes A's folder. Rebuilding A gives A's manifest byte for
    byte, so its folder name already exists: the half-removed folder must not be
    published as if it were the new build."""
    out = tmp_path / "bundle"
    epoch = EPOCH
    assert run_build(sources["1.0.0"], out, epoch).returncode == 0
    first = Snapshot.take(out).target
    assert run_build(sources["2.0.0"], out, epoch).returncode == 0
    result = run_build(
        sources["3.0.0"], out, epoch, harness=[sys.executable, "-c", HARNESS, "mid-prune"]
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert published(out)[1] == "3.0.0"
    assert first in Snapshot.take(out).folders  # A's folder, partly removed
    with pytest.raises(BundleError):
        open_bundle(versions_of(out) / str(first), [PUBLIC], hash_all=True)

    result = run_build(sources["1.0.0"], out, epoch)
    assert result.returncode == 0, result.stderr  # the build says it published A…
    name, version, problem = published(out)
    assert name == first  # …under the same name, as a reproducible build should
    assert problem is None, problem  # BUG: the half-removed folder is what is published
    assert version == "1.0.0"
