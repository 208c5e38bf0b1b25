"""The packaging-line example, as docs/guide/pedigree.md describes it: its reviews come out
byte for byte the same from make_example.py, it checks and builds with the findings the
page shows, and at the page's fixed time every doc is in the state the page says, with
the pedigree the page quotes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, ROOT, run_cli

from handbook import Library
from handbook.bundle.manifest import utc_seconds
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "packaging-line"
CONFIG = EXAMPLE / "mkdocs.yml"
PAGE = ROOT / "docs" / "guide" / "pedigree.md"
AT = "2026-12-01T00:00:00Z"
NOW = utc_seconds(AT)

STATES = {
    "device.orbis.l40": "reviewed",
    "device.kestrel.cw5": "under_approved",
    "procedure.changeover": "suspect",
    "guide.line-controller-api": "suspect",
    "procedure.reject-bin": "contested",
    "procedure.labeller-threading": "stale",
    "procedure.labeller-threading-2024": "retired",
    "guide.about": "unreviewed",
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    out = tmp_path_factory.mktemp("packaging-line") / "bundle"
    build(load_config(CONFIG), out, KEY)
    assert NOW is not None
    return Library.open(out, allow_unsigned=True, clock=lambda: NOW)


def copy_of_example(tmp_path: Path) -> Path:
    target = tmp_path / "packaging-line"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("build"))
    return target


def files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def page_block(marker: str) -> Any:
    """The JSON of the first ```json block after the line `marker` in the pedigree page."""
    text = PAGE.read_text(encoding="utf-8")
    after = text[text.index(marker) :]
    match = re.search(r"```json\n(.*?)```", after, re.DOTALL)
    assert match is not None, f"no json block after {marker!r} in {PAGE}"
    return json.loads(match[1])


def test_make_example_writes_the_same_keys_and_reviews(tmp_path: Path) -> None:
    copy = copy_of_example(tmp_path)
    for made in [*(copy / "reviews").glob("*.json"), *(copy / "example-keys").glob("*.pem")]:
        made.unlink()
    subprocess.run([sys.executable, "make_example.py"], cwd=copy, check=True, capture_output=True)
    for folder in ("reviews", "example-keys", "docs"):
        made = {p.relative_to(copy): p.read_bytes() for p in files(copy / folder)}
        kept = {p.relative_to(EXAMPLE): p.read_bytes() for p in files(EXAMPLE / folder)}
        assert made == kept, (
            f"examples/packaging-line/{folder} is not what make_example.py writes; "
            "regenerate it with: python examples/packaging-line/make_example.py"
        )


def test_the_example_checks_with_one_notice() -> None:
    run = run_cli("check", "--config", str(CONFIG), "--explain", "--strict")
    assert run.exit_code == 0
    assert run.lines[0] == (
        "devices/kestrel-cw5.md:1:1: HB805 (notice) device.kestrel.cw5 is protected and has "
        "1 of the 2 approvals its current revision needs; it ships flagged: ask reviewers for "
        "`handbook review device.kestrel.cw5 --verdict approve`"
    )
    assert run.lines[-1] == "8 files checked (8 docs): 0 errors, 0 warnings, 1 notice"


def test_every_doc_is_in_the_state_the_page_says(library: Library) -> None:
    listed = library.list(include_retired=True, limit=50)["docs"]
    assert {d["id"]: d["pedigree"]["state"] for d in listed} == STATES
    page = PAGE.read_text(encoding="utf-8")
    for doc_id, state in STATES.items():
        assert f"| `{doc_id}` | `{state}` |" in page


def test_the_derived_fields_follow_the_formulas(library: Library) -> None:
    approved = library.get("device.orbis.l40")["pedigree"]
    assert approved["confidence"] == 0.75  # (2 + 1) / (2 + 0 + 2)
    assert (approved["approvals"], approved["approvals_required"]) == (2, 2)
    assert approved["staleness_days"] == 27  # bob's approval on 2026-11-03 09:00
    assert "verify_first" not in approved
    contested = library.get("procedure.reject-bin")["pedigree"]
    assert contested["confidence"] == 0.4  # (1 + 1) / (1 + 2 * 1 + 2)
    assert contested["staleness_days"] == 25  # the contradiction leaves staleness alone
    unreviewed = library.get("guide.about")["pedigree"]
    assert unreviewed == {"confidence": 0.5, "reviews": 0, "approvals": 0, "state": "unreviewed"}


def test_list_filters_on_pedigree(library: Library) -> None:
    def ids(**filters: Any) -> list[str]:
        return [d["id"] for d in library.list(limit=50, **filters)["docs"]]

    assert "procedure.labeller-threading-2024" not in ids()
    assert len(ids()) == 7 and len(ids(include_retired=True)) == 8
    assert ids(suspect=True) == ["guide.line-controller-api", "procedure.changeover"]
    assert ids(reviewed=False) == ["guide.about", "procedure.changeover"]


def test_the_answers_on_the_page_are_the_libraries(library: Library) -> None:
    hit = library.search("reject bin", limit=1)["hits"][0]
    assert page_block("<!-- search: reject bin -->") == {
        k: hit[k] for k in ("id", "section", "pedigree")
    }
    retired = library.get("procedure.labeller-threading-2024")["pedigree"]
    assert page_block("<!-- get: procedure.labeller-threading-2024 -->") == retired


def test_the_review_queue(tmp_path: Path) -> None:
    """`handbook reviews` prints what the page shows, the states named as on the site."""
    run = run_cli("reviews", "--config", str(CONFIG), "--at", AT)
    assert run.exit_code == 0
    text = PAGE.read_text(encoding="utf-8")
    command = f"$ handbook reviews --at {AT}\n"
    shown = text[text.index(command) + len(command) :].split("```")[0]
    assert run.stdout == shown
    assert [line[:15].strip() for line in run.lines[:-1]] == [
        "contested",
        "suspect",
        "suspect",
        "under approved",
        "stale",
        "unreviewed",
    ]
    queue = json.loads(run_cli("reviews", "--config", str(CONFIG), "--at", AT, "--json").stdout)
    assert [item["state"] for item in queue] == [
        "contested",
        "suspect",
        "suspect",
        "under_approved",
        "stale",
        "unreviewed",
    ]


def test_invalidate_and_review_again_as_the_page_shows(tmp_path: Path) -> None:
    copy = copy_of_example(tmp_path)
    config, key = str(copy / "mkdocs.yml"), str(copy / "example-keys" / "carol.pem")
    uri = "urn:api:line-controller:v2"
    run = run_cli(
        "invalidate", uri, "--at", "2026-11-20T00:00:00Z", "--key", key, "--config", config
    )
    assert run.exit_code == 0
    assert run.lines[1] == "suspect until reviewed again: guide.line-controller-api"
    bob = str(copy / "example-keys" / "bob.pem")
    basis = "Checked the three calls against API v2.1."
    run = run_cli(
        "review", "guide.line-controller-api", "--verdict", "corroborate", "--basis", basis,
        "--at", "2026-11-27T09:00:00Z", "--key", bob, "--config", config,
    )  # fmt: skip
    assert run.exit_code == 0
    queue = json.loads(run_cli("reviews", "--config", config, "--at", AT, "--json").stdout)
    assert "guide.line-controller-api" not in {item["id"] for item in queue}


def test_a_review_by_an_owner_is_a_warning_and_does_not_count(tmp_path: Path) -> None:
    copy = copy_of_example(tmp_path)
    config, key = str(copy / "mkdocs.yml"), str(copy / "example-keys" / "carol.pem")
    run = run_cli(
        "review", "device.kestrel.cw5", "--verdict", "approve", "--basis", "Read it again.",
        "--at", "2026-11-26T09:00:00Z", "--key", key, "--config", config,
    )  # fmt: skip
    assert run.exit_code == 0
    # carol is no owner of the checkweigher: her approval is its second
    assert "HB805" not in run_cli("check", "--config", config, "--explain").stdout
    run = run_cli(
        "review", "device.orbis.l40", "--verdict", "approve", "--basis", "I wrote it.",
        "--at", "2026-11-26T09:00:00Z", "--key", key, "--config", config,
    )  # fmt: skip
    check = run_cli("check", "--config", config)
    assert check.exit_code == 0
    assert re.fullmatch(
        r"\.\./reviews/[0-9a-f]{64}\.json:1:1: HB804 \(warning\) carol reviews device\.orbis\.l40, "
        r"which names them in `owners`; a review must come from someone else to count",
        check.lines[0],
    )
