"""Configuration: every bad key is a usage error (exit 2) that names the key and its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from handbook_build.config.options import OPTIONS, Limits
from handbook_build.config.settings import ConfigError, load_config
from handbook_build.mkdocs_plugin import HandbookConfig


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "mkdocs.yml"
    path.write_text(text, encoding="utf-8")
    return path


def errors(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    prefix = f"{path}:"
    return [str(f).removeprefix(prefix) for f in info.value.findings]


HEAD = "site_name: x\nplugins:\n  - search\n  - handbook:\n"


def test_full_configuration_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEAD
        + """\
      library: plant-floor
      version: 1.2.0-rc.1+build.5
      vocab: {kind: [device, guide], protocol: [modbus]}
      required: [verified]
      limits: {body_warn_chars: 100, body_max_chars: 200}
      snippet_validators: {yaml: "off", JSON: "handbook_build.checks.snippets:check_json", ini: off}
      rules: {HB401: "off", HB210: error}
      exclude: ["drafts/*"]
""",
    )
    config = load_config(path)
    assert config.library == "plant-floor"
    assert config.version == "1.2.0-rc.1+build.5"
    assert config.vocabularies == {
        "kind": ("device", "guide"),
        "protocol": ("modbus",),
        "verified": ("verified", "field_tested", "unverified"),
    }
    assert config.required_fields == ("id", "title", "kind", "summary", "verified")
    assert config.limits == Limits(summary_chars=250, body_warn_chars=100, body_max_chars=200)
    assert config.snippet_validators == {
        "yaml": "off",
        "json": "handbook_build.checks.snippets:check_json",
        "ini": "off",
    }
    assert config.rules == {"HB401": "off", "HB210": "error"}
    assert config.docs_dir == (tmp_path / "docs").resolve()


def test_mkdocs_tags_and_dict_form_plugins_are_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
site_name: !ENV [SITE_NAME, x]
markdown_extensions:
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
plugins:
  search: {}
  handbook:
    library: lib
    version: 0.1.0
""",
    )
    assert load_config(path).library == "lib"


def test_every_problem_is_reported_at_its_line(tmp_path: Path) -> None:
    assert errors(
        tmp_path,
        HEAD
        + """\
      version: 1.2
      vocab: {kind: device, verified: [yes]}
      required: id
      limits: {body_warn_chars: 900, body_max_chars: 10, typo: 1}
      snippet_validators: {yaml: not a ref}
      rules: {HB999: off, HB001: warn, HB101: loud}
      exclude: "*.tmp"
      colour: blue
""",
    ) == [
        "4:5: HB001 handbook.library: is required",
        "5:7: HB001 handbook.version: 1.2 is not a semantic version like 1.2.0 (quote it in YAML)",
        "6:7: HB001 handbook.vocab.kind: must be a non-empty list of strings",
        "6:7: HB001 handbook.vocab.verified: is fixed by the doc format: verified, field_tested, unverified",
        "7:7: HB001 handbook.required: must be a list of field names",
        "8:7: HB001 handbook.limits.body_warn_chars: must not exceed body_max_chars",
        "8:7: HB001 handbook.limits.typo: unknown limit; "
        "expected one of: summary_chars, body_warn_chars, body_max_chars, resource_bytes",
        '9:7: HB001 handbook.snippet_validators.yaml: must be "module:function" or "off", not \'not a ref\'',
        "10:7: HB001 handbook.rules.HB001: configuration errors cannot be switched off",
        "10:7: HB001 handbook.rules.HB101: must be error, warn, notice or off, not 'loud'",
        "10:7: HB001 handbook.rules.HB999: unknown rule code; see the rule reference in the docs",
        "11:7: HB001 handbook.exclude: must be a list of glob patterns",
        "12:7: HB001 handbook.colour: unknown key; expected one of: library, version, vocab, "
        "required, limits, snippet_validators, rules, exclude, list_fields, bundle_dir, "
        "signing_key, expires, layout, adopt, reviews, default_lang, audiences, semantic, "
        "embedding_cache, pii, signing, "
        "strict, lunr_index",
    ]


def test_validator_that_cannot_be_imported(tmp_path: Path) -> None:
    assert errors(
        tmp_path,
        HEAD
        + """\
      library: lib
      version: 1.0.0
      snippet_validators:
        ini: "no_such_module_here:check"
        json: "json:no_such_function"
""",
    ) == [
        "7:7: HB002 handbook.snippet_validators.ini: cannot import no_such_module_here: "
        "ModuleNotFoundError: No module named 'no_such_module_here'; "
        "install the module or fix the name",
        "7:7: HB002 handbook.snippet_validators.json: json has no function no_such_function; "
        "install the module or fix the name",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "site_name: x\n",
            "1:1: HB001 no `handbook` entry under `plugins:`; add `- handbook:` with `library` and `version`,"
            " or run `handbook init --adopt`",
        ),
        (
            "plugins: [search]\n",
            "1:1: HB001 no `handbook` entry under `plugins:`; add `- handbook:` with `library` and `version`,"
            " or run `handbook init --adopt`",
        ),
        ("- a list\n", "1:1: HB001 the configuration must be a mapping of settings"),
        ("site_name: [x\n", "2:1: HB001 invalid YAML: expected ',' or ']', but got '<stream end>'"),
        ("plugins:\n  - handbook\n", "2:5: HB001 handbook.library: is required"),
        ("plugins:\n  - handbook: [a]\n", "2:5: HB001 handbook: must be a mapping of options"),
        (
            "docs_dir: nowhere\nplugins:\n  - handbook: {library: a, version: 1.0.0}\n",
            "1:1: HB001 docs_dir: {tmp}/nowhere is not a directory",
        ),
    ],
)
def test_file_level_problems(tmp_path: Path, text: str, expected: str) -> None:
    found = errors(tmp_path, text)
    assert found[0].replace(str(tmp_path.resolve()), "{tmp}") == expected


def test_cli_exits_2_and_prints_the_findings(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "      library: Bad Name\n      version: 1.0.0\n")
    run = run_cli("check", "--config", str(path))
    assert run.exit_code == 2
    assert run.lines == [
        f"{path}:5:7: HB001 handbook.library: 'Bad Name' is not a library name "
        "(lowercase letters, digits, `_`, `-`, dots between parts)"
    ]
    assert run.stderr.strip() == f"{path}: configuration error, nothing checked"


def test_absent_options_take_the_defaults_of_the_table(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + "      library: lib\n      version: 1.0.0\n"))
    assert (config.vocab, config.required, config.limits, config.rules) == ({}, (), Limits(), {})
    assert (config.snippet_validators, config.exclude, config.list_fields) == ({}, (), None)
    assert config.bundle_dir == tmp_path.resolve() / "build" / "bundle"
    assert (config.signing_key, config.expires, config.default_lang) == (None, None, None)


def test_mkdocs_declares_the_options_of_the_table() -> None:
    """MkDocs' own check of the entry: the names, YAML types and defaults of `OPTIONS`."""
    plugin_config = HandbookConfig()
    plugin_config.load_dict({"library": "lib", "version": "1.0.0", "vocab": ["x"], "colour": 1})
    failed, warnings = plugin_config.validate()
    assert [name for name, _ in failed] == ["vocab"]
    assert warnings == [("colour", "Unrecognised configuration name: colour")]
    assert list(plugin_config) == [option.name for option in OPTIONS] + ["colour"]
    assert plugin_config["bundle_dir"] == "build/bundle"
    assert plugin_config["exclude"] == [] and plugin_config["signing_key"] is None


@pytest.mark.parametrize(
    ("value", "expected"), [(None, "gzip"), ("gzip", "gzip"), ("json", "json"), ("none", "none")]
)
def test_lunr_index_forms(tmp_path: Path, value: str | None, expected: str) -> None:
    line = "" if value is None else f"      lunr_index: {value}\n"
    path = write(tmp_path, HEAD + "      library: lib\n      version: 1.0.0\n" + line)
    assert load_config(path).lunr_index == expected


def test_lunr_index_off_in_yaml_is_none_and_other_values_are_refused(tmp_path: Path) -> None:
    """YAML 1.1 reads a bare `off` or `no` as false: taken as meant, `none`."""
    path = write(
        tmp_path, HEAD + "      library: lib\n      version: 1.0.0\n      lunr_index: off\n"
    )
    assert load_config(path).lunr_index == "none"
    found = errors(
        tmp_path, HEAD + "      library: lib\n      version: 1.0.0\n      lunr_index: br\n"
    )
    assert found == ["7:7: HB001 handbook.lunr_index: 'br' is not one of gzip, json, none"]
