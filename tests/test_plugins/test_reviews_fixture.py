"""The reviews-hostile fixture library: every pedigree rule (HB801-HB806) fails there
(test_check_cli.py checks that each does), and `handbook check --explain` gives exactly
`expected.txt`. Its keys and signed records are made by the committed script next to
it; they are regenerated here and compared."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from conftest import FIXTURES, run_cli

REVIEWS_HOSTILE = FIXTURES / "reviews-hostile"
GENERATE = "python tests/fixtures/reviews-hostile/generate.py"
REGENERATE = (
    f"{GENERATE} && handbook check --explain --config tests/fixtures/reviews-hostile/mkdocs.yml"
    " > tests/fixtures/reviews-hostile/expected.txt"
)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reviews_hostile", REVIEWS_HOSTILE / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_reviews_hostile_library_gives_exactly_the_expected_findings() -> None:
    run = run_cli("check", "--explain", "--config", str(REVIEWS_HOSTILE / "mkdocs.yml"))
    expected = (REVIEWS_HOSTILE / "expected.txt").read_text(encoding="utf-8")
    assert run.exit_code == 1
    assert run.stdout == expected, f"if the change is intended, regenerate with: {REGENERATE}"


def test_the_committed_keys_and_records_are_what_the_script_makes(tmp_path: Path) -> None:
    """Fixed keys, fixed times, deterministic signatures: a difference means the record
    format or the reviewed doc's revision changed."""
    generator().generate(tmp_path)
    for folder in ("reviews", "keys"):
        assert files(tmp_path / folder) == files(REVIEWS_HOSTILE / folder), (
            f"{folder}/ changed; if on purpose: {REGENERATE}"
        )


def test_each_finding_on_a_doc_is_named_for_its_code() -> None:
    """Docs are named for the code they break; records are named by their id (or, for
    HB801, for the code too)."""
    findings = (REVIEWS_HOSTILE / "expected.txt").read_text().split("\n\nRules that spoke:")[0]
    for line in findings.splitlines():
        path, _, _, rest = line.split(":", 3)
        code = rest.split()[0]
        name = Path(path).name
        assert name.startswith(code.lower()) or re.fullmatch(r"[0-9a-f]{64}\.json", name), line
