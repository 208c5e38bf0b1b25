"""Hostile inputs, each with a budget: the guard answers, and answers cheaply.

The budgets asserted are memory (tracemalloc, or for the 25 MB file the child
process's resident set) and outcomes; times are recorded, never asserted, since a
loaded machine makes any wall-clock bound flaky. Each test records its figures;
`test_zz_summary` prints them beside the unguarded baselines:
the YAML alias bomb expanded by a reader without the guard (measured on a smaller bomb,
scaled analytically), and lunr.py's cost on the queries the caps refuse (cited from
`handbook/query.py` and bench/README.md, not re-run).

Covered: the alias bomb; `!!python/*` tags; 10,000-deep nesting under both YAML
loaders; frontmatter over 64 KiB; a 25 MB markdown file; adversarial markdown nesting;
snippets that would create a file; validators that raise or exit; search queries beyond
and at the edge of every cap.
"""

from __future__ import annotations

import gc
import itertools
import json
import subprocess
import sys
import textwrap
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, ROOT, MakeLibrary, run_cli

from handbook import Library
from handbook.search.query import MAX_QUERY_CHARS, MAX_TERMS
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.pipeline import load as load_doc
from handbook_build.read import frontmatter
from handbook_build.read.parse import parse
from handbook_build.read.source import Text

FIGURES: list[tuple[str, str, str, str, str]] = []
"""(input, outcome, time, memory, unguarded baseline) rows for the summary."""


@dataclass
class Measured:
    seconds: float = 0.0
    peak: int = 0


@contextmanager
def measured() -> Iterator[Measured]:
    """Wall time and peak traced allocation of the block (time is under tracemalloc)."""
    result = Measured()
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    else:
        tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    try:
        yield result
    finally:
        result.seconds = time.perf_counter() - t0
        result.peak = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """The call's result and its time outside tracemalloc."""
    t0 = time.perf_counter()
    out = call()
    return out, time.perf_counter() - t0


def mb(n: float) -> str:
    return f"{n / 2**20:,.2f} MB" if n < 2**30 else f"{n / 2**30:,.1f} GB"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.0f} s"


def record(what: str, outcome: str, seconds: float, peak: float, baseline: str = "") -> None:
    FIGURES.append((what, outcome, ms(seconds), mb(peak), baseline))


FM = "---\nid: hostile.doc\ntitle: Hostile\nkind: guide\nsummary: A hostile doc.\n---\n"


def doc_parse(text: str, path: str = "x.md") -> tuple[Any, list[str]]:
    doc, findings = parse(Text(path, text))
    return doc, [str(f) for f in findings]


# -- YAML alias bomb -------------------------------------------------------------------------

BOMB = FIXTURES / "hostile" / "docs" / "hb205-alias-bomb.md"


def bomb(levels: int) -> str:
    """The fixture's shape: level 1 is nine strings, each further level nine aliases of
    the one below."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in itertools.pairwise("abcdefghijklmnopqrstuvwxyz"[:levels]):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


def expanded_json_bytes(levels: int) -> int:
    """Bytes of the JSON (json.dumps defaults) of the bomb's last list, fully expanded:
    `["lol", "lol", ...]` is 2 + 9*5 + 8*2; each level up is 2 + 9*(below) + 8*2."""
    size = 2 + 9 * len('"lol"') + 8 * len(", ")
    for _ in range(levels - 1):
        size = 2 + 9 * size + 8 * len(", ")
    return size


def expanded_leaves(levels: int) -> int:
    return int(9**levels)


def test_alias_bomb_is_refused_before_anything_is_built() -> None:
    text = BOMB.read_text(encoding="utf-8")
    assert text.count("\n") < 15 and len(text) < 400  # a few hundred bytes of YAML
    (doc, lines), seconds = timed(lambda: doc_parse(text, "bomb.md"))
    with measured() as m:
        doc_parse(text, "bomb.md")
    assert doc is None
    assert lines == [
        "bomb.md:3:4: HB205 frontmatter uses a YAML anchor or alias; write the value out"
    ]
    assert m.peak < 1_000_000, m.peak
    levels = 9
    would_be = sum(expanded_json_bytes(k) for k in range(1, levels + 1))  # every key's list
    record(
        f"alias bomb, {len(text)} bytes, {levels} levels",
        "HB205 refused",
        seconds,
        m.peak,
        f"expanded: {expanded_leaves(levels):,} strings in key i alone, {mb(would_be)} of JSON in all",
    )


def test_unguarded_baseline_shows_the_expansion_that_is_avoided() -> None:
    """yaml.safe_load keeps aliases as shared references, so loading alone is cheap; the
    cost comes when the value is written out (the catalog is JSON) or walked into fresh
    values, as the frontmatter reader does. Measured on a 6-level bomb, scaled by 9 per
    level to the fixture's 9 (the cost is linear in the expanded size)."""
    levels, scale = 6, 9 ** (9 - 6)
    text = bomb(levels)
    loaded, load_seconds = timed(lambda: yaml.safe_load(text))
    dumped, dump_seconds = timed(lambda: json.dumps(loaded))
    keys = sum(len(f'"{c}": ') for c in "abcdefghi"[:levels]) + 2 + (levels - 1) * len(", ")
    assert (
        len(dumped) == sum(expanded_json_bytes(k) for k in range(1, levels + 1)) + keys
    )  # the analytic size is right
    with measured() as loading:
        yaml.safe_load(text)
    with measured() as dumping:
        json.dumps(yaml.safe_load(text))
    with measured() as walking:
        frontmatter._Reader("x.md", text).mapping(yaml.compose(text, Loader=yaml.SafeLoader))
    guarded = tracemalloc_peak(lambda: doc_parse(FM.replace("---\n", "---\n" + text, 1)))
    assert guarded * 10 < dumping.peak and guarded * 10 < walking.peak, (
        guarded,
        dumping.peak,
        walking.peak,
    )
    record(
        f"unguarded: yaml.safe_load, {levels} levels",
        "loaded, aliases shared",
        load_seconds,
        loading.peak,
        "cheap: nothing is expanded yet",
    )
    record(
        f"unguarded: + json.dumps, {levels} levels",
        f"{len(dumped):,} bytes of JSON",
        load_seconds + dump_seconds,
        dumping.peak,
        f"x{scale} at 9 levels: ~{ms((load_seconds + dump_seconds) * scale)}, ~{mb(dumping.peak * scale)}",
    )
    record(
        f"unguarded: frontmatter reader, {levels} levels",
        "walked into new lists",
        walking.seconds,
        walking.peak,
        f"x{scale} at 9 levels: ~{ms(walking.seconds * scale)}, ~{mb(walking.peak * scale)}",
    )


def tracemalloc_peak(call: Callable[[], Any]) -> int:
    with measured() as m:
        call()
    return m.peak


# -- tags, nesting, size ----------------------------------------------------------------------


def _python_tags(marker: Path) -> list[str]:
    cmd = f'["touch {marker}"]'
    return [
        f"a: !!python/object/apply:os.system {cmd}",
        f"a: !!python/object/new:os.system {cmd}",
        "a: !!python/name:os.system",
        "a: !!python/module:os",
        "a: !!python/object:builtins.object {}",
        f"a: !<tag:yaml.org,2002:python/object/apply:os.system> {cmd}",
        f"a:\n  - x\n  - !!python/object/apply:os.system {cmd}",
        f"? !!python/object/apply:os.system {cmd}\n: v",
        f"a: !!python/object/apply:subprocess.check_output [[touch, {marker}]]",
    ]


@pytest.mark.parametrize("loader", ["libyaml", "pure-python"])
def test_python_tags_are_refused_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    if loader == "pure-python":
        monkeypatch.setattr(frontmatter, "_Loader", yaml.SafeLoader)
    marker = tmp_path / "pwned"
    worst = Measured()
    for fm in _python_tags(marker):
        text = "---\n" + fm + "\n---\nbody\n"
        with measured() as m:
            doc, lines = doc_parse(text)
        assert doc is None, fm
        assert (
            len(lines) == 1
            and " HB206 frontmatter uses the YAML tag tag:yaml.org,2002:python/" in lines[0]
        ), (fm, lines)
        worst = Measured(max(worst.seconds, m.seconds), max(worst.peak, m.peak))
    assert not marker.exists()
    record(
        f"!!python/* tags ({loader}), {len(_python_tags(marker))} forms",
        "HB206 refused, nothing run",
        worst.seconds,
        worst.peak,
    )


def test_python_tag_through_the_check_never_runs(make_library: MakeLibrary, tmp_path: Path) -> None:
    marker = tmp_path / "pwned-by-check"
    docs = {
        f"t{n}.md": FM.replace(
            "summary: A hostile doc.\n", f"summary: A hostile doc.\n{fm}\n"
        ).replace("hostile.doc", f"hostile.t{n}")
        for n, fm in enumerate(_python_tags(marker)[:4])
    }
    run = run_cli("check", "--config", str(make_library(docs)))
    assert run.exit_code == 1
    assert sum(" HB206 " in line for line in run.lines) == 4, run.lines
    assert not marker.exists()


NESTING = {
    "flow sequences": "a: " + "[" * 10_000 + "]" * 10_000,
    "flow mappings": "a: " + "{b: " * 10_000 + "}" * 10_000,
    "unclosed flow": "a: " + "[" * 10_000,
    "block sequences": "a:\n  " + "- " * 10_000 + "x",
    "mixed": "a: " + "[{b: " * 5_000 + "}]" * 5_000,
}


@pytest.mark.parametrize("loader", ["libyaml", "pure-python"])
@pytest.mark.parametrize("shape", list(NESTING))
def test_ten_thousand_deep_nesting_is_refused_without_recursion_error(
    monkeypatch: pytest.MonkeyPatch, shape: str, loader: str
) -> None:
    if loader == "pure-python":
        monkeypatch.setattr(frontmatter, "_Loader", yaml.SafeLoader)
    text = "---\n" + NESTING[shape] + "\n---\nbody\n"
    limit = sys.getrecursionlimit()
    (doc, lines), seconds = timed(lambda: doc_parse(text))  # a RecursionError would fail here
    with measured() as m:
        doc_parse(text)
    assert sys.getrecursionlimit() == limit
    assert (
        doc is None
        and len(lines) == 1
        and " HB207 frontmatter is nested deeper than 32 levels" in lines[0]
    ), lines
    assert m.peak < 10_000_000, m.peak
    record(f"10,000-deep {shape} ({loader})", "HB207 refused", seconds, m.peak)


def test_nesting_limit_is_exact() -> None:
    """32 levels (the mapping and 31 lists) parse; 33 do not."""
    doc, _ = doc_parse("---\na: " + "[" * 31 + "]" * 31 + "\n---\n")
    assert doc is not None
    doc, lines = doc_parse("---\na: " + "[" * 32 + "]" * 32 + "\n---\n")
    assert doc is None and " HB207 " in lines[0]


SIZES = {
    "64 KiB + 1 byte, ASCII": "k: " + "x" * (64 * 1024 - 3),  # + "\n": 65,537 bytes
    "16,385 four-byte characters": "k: " + "\U0001f642" * 16_385,  # 16,389 characters, 65,544 bytes
    "10 MB": "k: " + "x" * 10_000_000,
}


@pytest.mark.parametrize("case", list(SIZES))
def test_oversized_frontmatter_is_refused_before_parsing(case: str) -> None:
    source = SIZES[case] + "\n"
    text = "---\n" + source + "---\nbody\n"
    (doc, lines), seconds = timed(lambda: doc_parse(text))
    with measured() as m:
        doc_parse(text)
    assert doc is None
    assert lines == [
        f"x.md:2:1: HB207 frontmatter is {len(source.encode()):,} bytes; "
        "the limit is 65,536: move long content into the body"
    ]
    assert m.peak < 2 * len(source.encode()) + 1_000_000, m.peak  # one encoded copy, no parse
    record(f"frontmatter {case}", "HB207 refused", seconds, m.peak)


def test_frontmatter_of_exactly_64_kib_is_parsed() -> None:
    source = "k: " + "x" * (64 * 1024 - 4) + "\n"
    assert len(source.encode()) == 64 * 1024
    doc, lines = doc_parse("---\n" + source + "---\nbody\n")
    assert doc is not None and doc.meta["k"] == "x" * (64 * 1024 - 4), lines


# -- 25 MB of markdown -------------------------------------------------------------------------

BIG = 25 * 1024 * 1024


def _big_library(tmp_path: Path, body_unit: str) -> Path:
    root = tmp_path / "big"
    (root / "docs").mkdir(parents=True)
    head = FM + "# Big\n\n"
    (root / "docs" / "big.md").write_text(
        head + body_unit * ((BIG - len(head)) // len(body_unit)), encoding="utf-8"
    )
    config = {
        "site_name": "t",
        "docs_dir": "docs",
        "plugins": [{"handbook": {"library": "big", "version": "1.0.0"}}],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root / "mkdocs.yml"


def test_a_25_mb_paragraph_is_checked_within_memory(tmp_path: Path) -> None:
    """One 25 MB paragraph of words: refused by the body limit (HB402) in a few copies
    of its own size."""
    config = load_config(_big_library(tmp_path, "word "))
    with measured() as m:
        _, findings = load_doc(config, "big.md")
    assert any(f.code == "HB402" for f in findings), findings
    assert m.peak < 8 * BIG, mb(m.peak)
    record("25 MB markdown, one paragraph", "HB402 (body over the limit)", m.seconds, m.peak)


WATCHDOG = textwrap.dedent("""
    import json, os, sys, threading, time
    from handbook_build import load_config
    from handbook_build.pipeline import load

    config, cap, limit = load_config(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    base, start, seen = rss(), time.monotonic(), [0]

    def watch():
        while True:
            grown, elapsed = rss() - base, time.monotonic() - start
            seen[0] = max(seen[0], grown)
            if grown > cap or elapsed > limit:
                print(
                    json.dumps({"stopped": "memory" if grown > cap else "time", "grown": grown, "seconds": elapsed}),
                    flush=True,
                )
                os._exit(3)
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()
    doc, findings = load(config, "big.md")
    seen[0] = max(seen[0], rss() - base)
    print(json.dumps({"codes": [f.code for f in findings], "severities": [f.severity for f in findings],
                      "grown": seen[0], "seconds": time.monotonic() - start}), flush=True)
    os._exit(0)
""")
RSS_CAP = 300 * 1024 * 1024
"""Resident memory the check may add for one 25 MB file: twelve times its size."""


@pytest.mark.skipif(
    not Path("/proc/self/statm").exists(), reason="reads the resident set from /proc"
)
def test_a_25_mb_file_of_short_blocks_is_refused_within_memory(tmp_path: Path) -> None:
    """25 MB of one-line paragraphs: the check must refuse it (or check it) in bounded
    memory. A child process runs the check under a watchdog that stops it once its
    resident memory has grown by RSS_CAP, or after ten minutes (a hang, not a speed bound)."""
    sample = FM + "x\n\n" * 10_000  # what parsing the whole file would cost, scaled from 30 kB
    _, sample_seconds = timed(lambda: doc_parse(sample))
    sample_peak = tracemalloc_peak(lambda: doc_parse(sample))
    scale = BIG / len(sample)
    record(
        "unguarded: parser alone, 30 kB of one-line paragraphs",
        "parsed",
        sample_seconds,
        sample_peak,
        f"x{scale:,.0f} for 25 MB: ~{ms(sample_seconds * scale)}, ~{mb(sample_peak * scale)}",
    )
    config = _big_library(tmp_path, "x\n\n")
    proc = subprocess.run(
        [sys.executable, "-c", WATCHDOG, str(config), str(RSS_CAP), "600"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        check=False,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    outcome = (
        "finished" if proc.returncode == 0 else f"stopped by the watchdog ({result['stopped']})"
    )
    record(
        "25 MB markdown, one-line paragraphs (child RSS)",
        outcome,
        result["seconds"],
        result["grown"],
    )
    assert proc.returncode == 0, (result, proc.stderr[-2000:])
    assert "error" in result["severities"], result
    assert result["grown"] < RSS_CAP


ADVERSARIAL = {
    "10,000 nested blockquotes": ">" * 10_000 + " x\n",
    "10,000 nested list markers": "- " * 10_000 + "x\n",
    "10,000 nested ordered markers": "1. " * 10_000 + "x\n",
    "5,000 quote-list pairs": "> - " * 5_000 + "x\n",
    "126-level indented list": "".join("  " * i + "- x\n" for i in range(126)),
    "2,000 lines of 30 quotes + 30 lists": ("> " * 30 + "- " * 30 + "x\n") * 2_000,
    "heading of 16,000 [": "# " + "[" * 16_000 + "\n",
    "heading of 8,000 ![": "# " + "![" * 8_000 + "\n",
    "heading of 4,000 [a](": "# " + "[a](" * 4_000 + "\n",
    "heading of 8,000 * then 8,000 _": "# " + "*" * 8_000 + "a" + "_" * 8_000 + "\n",
    "heading of 8,000 <a": "# " + "<a" * 8_000 + "\n",
    "8,000-line setext heading": "a\n" * 8_000 + "===\n",
    "2,000 empty fences": "```\n```\n" * 2_000,
}


@pytest.mark.parametrize("case", list(ADVERSARIAL))
def test_adversarial_markdown_parses_within_a_bound(case: str) -> None:
    """Nesting far deeper than anyone writes, and pathological inline syntax in headings
    (the only inline parsing) at about the body limit of 16,000 characters: block parsing
    stays linear and markdown-it's nesting limit (20) holds."""
    text = FM + ADVERSARIAL[case]
    (doc, lines), seconds = timed(lambda: doc_parse(text))
    with measured() as m:
        doc_parse(text)
    assert doc is not None, lines
    assert m.peak < 50_000_000, m.peak
    record(
        f"markdown: {case}",
        f"{len(doc.headings)} headings, {len(doc.fences)} fences",
        seconds,
        m.peak,
    )


# -- snippets and validators -----------------------------------------------------------------


def test_snippets_are_never_executed(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "executed"
    fences = [
        ("python", f"open({str(marker)!r}, 'w').write('x')"),
        ("py", f"import os; os.system('touch {marker}')"),
        ("{.python}", f"__import__('pathlib').Path({str(marker)!r}).touch()"),
        ("bash", f"touch {marker}"),
        ("sh", f"touch {marker}"),
        ("console", f"$ touch {marker}"),
        ("yaml", f'a: !!python/object/apply:os.system ["touch {marker}"]'),
        ("json", f'{{"cmd": "touch {marker}"}}'),
        ("toml", f'cmd = "touch {marker}"'),
    ]
    body = "\n".join(f"```{lang}\n{code}\n```\n" for lang, code in fences)
    body += f"\n~~~python\nopen({str(marker)!r}, 'w')\n~~~\n"
    config = make_library({"run.md": FM + "# Run\n\n" + body})
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 0, run.lines
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    bundle = build(load_config(config), tmp_path / "out", None).bundle
    lib = Library.open(bundle.path, allow_unsigned=True)
    assert str(marker) in lib.get("hostile.doc")["content"]
    assert not marker.exists()


def _validator_library(make_library: MakeLibrary, tmp_path: Path, module: str, source: str) -> Path:
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib" / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    crashing = (
        FM + "# A\n\n```ini\nx = 1\n```\n\n```ini\ny = 2\n```\n"
    )  # fences' text on lines 10 and 14
    floating = "---\nid: hostile.other\ntitle: Other\nkind: guide\nsummary: Another doc.\nversion: 1.10\n---\n# Other\n"
    return make_library(
        {"a.md": crashing, "b.md": floating}, snippet_validators={"ini": f"{module}:check"}
    )


VALIDATOR_RAISES = {
    "RuntimeError": ("def check(text):\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
    "RecursionError": ("def check(text):\n    return check(text)\n", "RecursionError"),
    "MemoryError": ("def check(text):\n    raise MemoryError('pretend')\n", "MemoryError"),
    "non-integer line": ("def check(text):\n    return [('x', 'bad line')]\n", "ValueError"),
    "None": ("def check(text):\n    return None\n", "TypeError: returned NoneType"),
    "generator": ("def check(text):\n    yield 'lazy'\n", "TypeError: returned generator"),
}


@pytest.mark.parametrize("case", list(VALIDATOR_RAISES))
def test_a_validator_that_raises_never_stops_the_check(
    make_library: MakeLibrary, tmp_path: Path, case: str
) -> None:
    source, message = VALIDATOR_RAISES[case]
    module = f"raising_{abs(hash(case)) % 10**8}"
    run = run_cli(
        "check", "--config", str(_validator_library(make_library, tmp_path, module, source))
    )
    assert run.exit_code == 1
    crashed = [line for line in run.lines if " HB502 " in line]
    assert [line.split(" HB502 ")[0] for line in crashed] == ["a.md:10:1:", "a.md:14:1:"], run.lines
    assert all(message in line for line in crashed), crashed
    assert any(line.startswith("b.md:") and " HB209 " in line for line in run.lines), (
        run.lines
    )  # the check went on


VALIDATOR_EXITS = {
    "sys.exit(0)": "import sys\ndef check(text):\n    sys.exit(0)\n",
    "sys.exit(1)": "import sys\ndef check(text):\n    sys.exit(1)\n",
    "raise SystemExit": "def check(text):\n    raise SystemExit('bye')\n",
}


@pytest.mark.parametrize("case", list(VALIDATOR_EXITS))
def test_a_validator_that_exits_never_stops_the_check(
    make_library: MakeLibrary, tmp_path: Path, case: str
) -> None:
    module = f"exiting_{abs(hash(case)) % 10**8}"
    run = run_cli(
        "check",
        "--config",
        str(_validator_library(make_library, tmp_path, module, VALIDATOR_EXITS[case])),
    )
    assert run.exit_code == 1, (run.exit_code, run.lines)
    assert sum(" HB502 " in line and "SystemExit" in line for line in run.lines) == 2, run.lines
    assert any(line.startswith("b.md:") and " HB209 " in line for line in run.lines), run.lines


# -- search queries beyond and at the caps -------------------------------------------------

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Library:
    built = build(
        load_config(EXAMPLE), tmp_path_factory.mktemp("hostile-queries") / "bundle", None
    ).bundle.path
    library = Library.open(built, allow_unsigned=True)
    library.search("warm up")  # the term list is built on the first wildcard or fuzzy query
    library.search("warm*")
    return library


WORDS = [
    "modbus",
    "register",
    "compressor",
    "meter",
    "energy",
    "mqtt",
    "broker",
    "topic",
    "commissioning",
    "gateway",
    "pressure",
    "holding",
    "input",
    "float",
    "word",
    "order",
    "collector",
    "snippet",
    "port",
    "unit",
    "connection",
    "defaults",
    "pitfalls",
    "plant",
    "floor",
    "retain",
    "payload",
    "voltage",
    "current",
    "power",
    "polling",
    "timeout",
]
assert len(WORDS) == MAX_TERMS

BEYOND = {
    "fuzzy distance 3": ("registr~3", "fuzzy_too_far"),
    "lunr.py's 10 s query: alphaalphaalpha~6": ("alphaalphaalpha~6", "fuzzy_too_far"),
    "fuzzy distance 999": ("modbus~999", "fuzzy_too_far"),
    "3 wildcards in a word": ("mo*b*s*", "too_many_wildcards"),
    "3 wildcard words": ("m* r* q*", "too_many_wildcards"),
    "9 wildcards, not leading": ("f*f*f*f*f*f*f*f*f*", "too_many_wildcards"),
    "lunr.py's 20 s query: *f*f*f*f*f*f*f*f*f*": ("*f*f*f*f*f*f*f*f*f*", "leading_wildcard"),
    "leading wildcard": ("*bus", "leading_wildcard"),
    "leading wildcard, excluded, scoped": ("modbus -title:*bus", "leading_wildcard"),
    "2,002 characters": ("modbus " * 286, "query_too_long"),
    "2,001 characters, one word": ("x" * 2_001, "query_too_long"),
    "33 required terms": (" ".join(f"+t{i}" for i in range(33)), "too_many_terms"),
    "33 fuzzy terms": (" ".join(f"word{i}~1" for i in range(33)), "too_many_terms"),
    "33 field terms by hyphens": ("title:" + "-".join(["ab"] * 33), "too_many_terms"),
}


@pytest.mark.parametrize("case", list(BEYOND))
def test_queries_beyond_the_caps_are_structured_errors(lib: Library, case: str) -> None:
    query, code = BEYOND[case]
    resp, seconds = timed(lambda: lib.search(query))
    with measured() as m:
        lib.search(query)
    assert resp["count"] == 0 and resp["hits"] == [] and resp["error"]["code"] == code, resp
    assert resp["error"]["message"] and resp["response_chars"] < 1_000
    assert lib.list(query=query).get("error", {}).get("code") != "internal_error"
    record(
        f"search: {case}",
        code,
        seconds,
        m.peak,
        {
            "lunr.py's 10 s query: alphaalphaalpha~6": "lunr.py: over 10 s (300 docs)",
            "lunr.py's 20 s query: *f*f*f*f*f*f*f*f*f*": "lunr.py: over 20 s (300 docs)",
        }.get(case, ""),
    )


def _chars_500() -> str:
    """32 terms in exactly 500 characters: field scopes, boosts and fuzziness make the
    words long; spaces pad the rest."""
    terms = [f"keywords:{w}~1^7" if n % 2 else f"title:{w}^100" for n, w in enumerate(WORDS)]
    out = ""
    for term in terms:
        if len(out) + len(term) + 1 > MAX_QUERY_CHARS:
            break
        out = f"{out} {term}".strip()
    return out + " " * (MAX_QUERY_CHARS - len(out))


EDGE = {
    "word~2": "registr~2",
    "long word~2": "commissionning~2",
    "32 words ~2": " ".join(f"{w}~2" for w in WORDS),
    "ab*c*": "re*s*",
    "two wildcard words": "m* r*",
    "one-letter prefix": "c*",
    "32 terms": " ".join(WORDS),
    "500 characters": _chars_500(),
    "presence, fields, boosts at 100": "+modbus -mqtt title:register^100 keywords:compressor~1 reg*",
    "one 500-character word": "x" * MAX_QUERY_CHARS,
}


FINDS = {
    "word~2",
    "long word~2",
    "32 words ~2",
    "ab*c*",
    "two wildcard words",
    "one-letter prefix",
    "32 terms",
    "500 characters",
    "presence, fields, boosts at 100",
}


@pytest.mark.parametrize("case", list(EDGE))
def test_queries_at_the_edge_of_the_caps_answer(lib: Library, case: str) -> None:
    query = EDGE[case]
    assert len(query) <= MAX_QUERY_CHARS
    resp, seconds = timed(lambda: lib.search(query))
    with measured() as m:
        lib.search(query)
    assert "error" not in resp, resp
    assert isinstance(resp["hits"], list) and resp["returned"] == len(resp["hits"])
    if case in FINDS:
        assert resp["count"] > 0, resp
    record(f"search at the cap: {case}", f"{resp['count']} hits", seconds, m.peak)


def test_edge_queries_sit_at_the_caps() -> None:
    assert (
        len(EDGE["500 characters"]) == MAX_QUERY_CHARS and len(EDGE["500 characters"].split()) > 20
    )
    assert len(EDGE["32 terms"].split()) == len(EDGE["32 words ~2"].split()) == MAX_TERMS


# -- summary ----------------------------------------------------------------------------------


def test_zz_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """The worst-case figures of this file beside the unguarded baselines."""
    if not FIGURES:
        pytest.skip("run the whole file for the figures")
    width = max(len(row[0]) for row in FIGURES)
    lines = [
        "",
        "hostile inputs: time outside tracemalloc where measured twice, peak traced allocation",
    ]
    lines.append(
        f"{'input':<{width}}  {'outcome':<34} {'time':>10} {'memory':>10}  unguarded baseline"
    )
    for what, outcome, seconds, peak, baseline in FIGURES:
        lines.append(f"{what:<{width}}  {outcome:<34} {seconds:>10} {peak:>10}  {baseline}")
    lines.append(
        "lunr.py baselines are cited from handbook/query.py and bench/README.md (300-doc index), not re-run."
    )
    with capsys.disabled():
        print("\n".join(lines))
