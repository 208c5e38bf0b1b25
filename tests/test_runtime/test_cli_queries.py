"""`handbook list / get / search`: the handlers at the command line. `--json` prints the
handler's dict exactly; the default output is for people; misses and errors exit 1; a
refused bundle exits 1 naming the cause; usage errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PUBLIC, run_cli

from handbook import Library
from handbook.bundle.signing import TRUSTED_KEYS_ENV


@pytest.fixture(autouse=True)
def _no_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)


def trusted(bundle: Path) -> list[str]:
    return ["--bundle", str(bundle), "--key", PUBLIC]


@pytest.mark.parametrize(
    ("args", "call"),
    [
        (["list"], lambda lib: lib.list()),
        (
            ["list", "--query", "compressor", "--filter", "kind=device"],
            lambda lib: lib.list(query="compressor", kind="device"),
        ),
        (
            ["list", "-f", "protocol=modbus", "-n", "1"],
            lambda lib: lib.list(limit=1, protocol="modbus"),
        ),
        (["get", "device.acme.ac200"], lambda lib: lib.get("device.acme.ac200")),
        (
            ["get", "device.acme.ac200", "--section", "register map"],
            lambda lib: lib.get("device.acme.ac200", section="register map"),
        ),
        (["search", "word order"], lambda lib: lib.search("word order")),
        (["search", "modbus", "-n", "2"], lambda lib: lib.search("modbus", limit=2)),
    ],
)
def test_json_is_the_handlers_answer(
    plant_floor_bundle: Path, args: list[str], call: object
) -> None:
    run = run_cli(*args, *trusted(plant_floor_bundle), "--json")
    assert run.exit_code == 0, run.stderr
    expected = call(Library.open(plant_floor_bundle, [PUBLIC]))  # type: ignore[operator]
    assert json.loads(run.stdout) == expected


def test_list_for_people(plant_floor_bundle: Path) -> None:
    run = run_cli("list", *trusted(plant_floor_bundle))
    assert run.exit_code == 0
    assert "device.acme.ac200" in run.stdout and "unverified" in run.stdout
    assert "6 of 6 docs" in run.stdout


def test_get_renders_markdown_with_metadata(plant_floor_bundle: Path) -> None:
    run = run_cli(
        "get", "device.acme.ac200", "--section", "Register map", *trusted(plant_floor_bundle)
    )
    assert run.exit_code == 0
    assert "Register map" in run.stdout and "device.acme.ac200" in run.stdout
    assert "| register |" not in run.stdout  # the table is rendered, not echoed as markdown


def test_search_for_people(plant_floor_bundle: Path) -> None:
    run = run_cli("search", "unit id", *trusted(plant_floor_bundle))
    assert run.exit_code == 0
    assert "score" in run.stdout and "matching sections" in run.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["get", "device.acme.ac2000"], "device.acme.ac200"),  # a suggestion
        (["get", "device.acme.ac200", "--section", "no such part"], "no section"),
        (["search", "foo~5"], "edit distance"),
        (["list", "--filter", "colour=red"], "'colour'"),  # not a field: unknown_parameter
    ],
)
def test_misses_and_errors_exit_1_with_the_reason(
    plant_floor_bundle: Path, args: list[str], message: str
) -> None:
    run = run_cli(*args, *trusted(plant_floor_bundle))
    assert run.exit_code == 1
    assert message in run.stderr


def test_json_error_is_still_the_handlers_dict(plant_floor_bundle: Path) -> None:
    run = run_cli("get", "nope", *trusted(plant_floor_bundle), "--json")
    assert run.exit_code == 1
    assert json.loads(run.stdout) == Library.open(plant_floor_bundle, [PUBLIC]).get("nope")


def test_bad_filter_syntax_is_a_usage_error(plant_floor_bundle: Path) -> None:
    run = run_cli("list", "--filter", "kind", *trusted(plant_floor_bundle))
    assert run.exit_code == 2
    assert "FIELD=VALUE" in run.stderr


def test_refused_bundles_exit_1(plant_floor_bundle: Path, tmp_path: Path) -> None:
    untrusted = run_cli("list", "--bundle", str(plant_floor_bundle))
    assert untrusted.exit_code == 1 and "refused:" in untrusted.stderr
    missing = run_cli("list", "--bundle", str(tmp_path / "none"), "--allow-unsigned")
    assert missing.exit_code == 1 and "no bundle directory" in missing.stderr
    bad_key = run_cli("list", "--bundle", str(plant_floor_bundle), "--key", "ed25519:nope")
    assert bad_key.exit_code == 2 and "--key" in bad_key.stderr


def test_keys_from_the_environment(
    plant_floor_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRUSTED_KEYS_ENV, PUBLIC)
    run = run_cli("search", "modbus", "--bundle", str(plant_floor_bundle), "--json")
    assert run.exit_code == 0
    assert json.loads(run.stdout)["count"] > 0


def test_verify_takes_bundle_option_or_path(plant_floor_bundle: Path) -> None:
    assert run_cli("verify", "--bundle", str(plant_floor_bundle), "--key", PUBLIC).exit_code == 0
    assert run_cli("verify", str(plant_floor_bundle), "--key", PUBLIC).exit_code == 0
