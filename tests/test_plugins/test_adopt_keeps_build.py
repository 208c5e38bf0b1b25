"""Adopting changes nothing that already worked: a site whose `mkdocs build --strict` and
CI build pass before `handbook init --adopt` passes them after it, with the content as it
stands (unsafe HTML, no frontmatter, an explicit nav that makes pages outside it a
warning); its own workflow's build steps pass with `CI=true`. Signing and Handbook's
strictness are what the user opts into, in the entry adoption writes; the site keeps
its HTML, and agents never get its script."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from adopted_site import make_site, mkdocs, run_step, workflow_build_steps
from conftest import KEY_FILE, KEY_PEM, Run, run_cli
from release_helpers import INSTALL_FROM

from handbook.bundle.local import open_bundle


def adopt(folder: Path, *args: str) -> Run:
    return run_cli("init", "--adopt", str(folder), "--install-from", INSTALL_FROM, *args)


def entry(site: Path) -> dict[str, object]:
    config = yaml.safe_load((site / "mkdocs.yml").read_text(encoding="utf-8"))
    found: dict[str, object] = config["plugins"][-1]["handbook"]
    return found


def set_option(site: Path, line: str, replacement: str) -> None:
    path = site / "mkdocs.yml"
    text = path.read_text(encoding="utf-8")
    assert line in text
    path.write_text(text.replace(line, replacement), encoding="utf-8")


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    """The site, built green before adoption, then adopted."""
    site = make_site(tmp_path / "repo")
    for before in (mkdocs(site, "--strict"), mkdocs(site, ci=True)):
        assert before.returncode == 0, before.stderr
    run = adopt(site)
    assert run.exit_code == 0, run.stderr
    return site


def test_strict_and_ci_builds_stay_green_and_the_docs_workflow_too(adopted: Path) -> None:
    for after in (mkdocs(adopted, "--strict"), mkdocs(adopted, ci=True)):
        assert after.returncode == 0, after.stderr
        assert "WARNING" not in after.stderr and "ERROR" not in after.stderr, after.stderr
        assert "INFO    -  handbook: 2 warnings, 8 notices" in after.stderr
    steps = workflow_build_steps(adopted / ".github" / "workflows" / "docs.yml")
    assert steps == ["mkdocs build --strict"]
    for step in steps:
        done = run_step(step, adopted)
        assert done.returncode == 0, done.stderr
    assert (adopted / "site" / "catalog" / "index.html").is_file()  # built, kept out of the nav
    assert os.path.islink(adopted / "build" / "bundle")


def test_the_entry_names_signing_and_strictness_as_opt_ins(adopted: Path) -> None:
    text = (adopted / "mkdocs.yml").read_text(encoding="utf-8")
    assert entry(adopted)["signing"] == "optional" and entry(adopted)["strict"] is False
    assert (
        "      # The site's own builds stay as they were: `signing: required` refuses unsigned builds\n"
        "      # under --strict and in CI (set the HANDBOOK_SIGNING_KEY secret first); `strict: true`\n"
        "      # makes `mkdocs build --strict` fail on Handbook's warnings about the pages.\n"
        "      signing: optional\n"
        "      strict: false\n"
    ) in text
    assert entry(adopted)["library"] == "widget-tools"  # from site_name, not the folder


def test_opting_into_strictness_makes_strict_builds_fail_on_the_warnings(adopted: Path) -> None:
    set_option(adopted, "strict: false", "strict: true")
    strict = mkdocs(adopted, "--strict")
    assert strict.returncode == 1
    assert "WARNING -  guide/setup.md:3:12: HB403 (warning) event handler `onerror`" in (
        strict.stderr
    )
    assert mkdocs(adopted).returncode == 0  # a plain build still goes, warnings shown


def test_opting_into_signing_refuses_unsigned_ci_builds_and_signs_with_a_key(
    adopted: Path,
) -> None:
    set_option(adopted, "signing: optional", "signing: required")
    refused = mkdocs(adopted, ci=True)
    assert refused.returncode == 1
    assert "handbook: no signing key; set $HANDBOOK_SIGNING_KEY" in refused.stderr
    signed = mkdocs(adopted, ci=True, key=str(KEY_FILE))  # a path, as users expect
    assert signed.returncode == 0, signed.stderr
    assert f"key from {KEY_FILE} ($HANDBOOK_SIGNING_KEY)" in signed.stderr
    assert mkdocs(adopted, ci=True, key=KEY_PEM).returncode == 0  # or the PEM text


def test_unsafe_html_stays_on_the_site_and_never_reaches_agent_text(adopted: Path) -> None:
    assert mkdocs(adopted).returncode == 0
    bundle = open_bundle(adopted / "build" / "bundle", [], allow_unsigned=True)
    texts = {d.source: bundle.read(d.content).decode("utf-8") for d in bundle.catalog.docs}
    left_out = "*[HTML that runs script or moves the page is left out here (HB403)]*"
    assert texts["index.md"] == (
        f"# Widget Tools\n\nWidgets for every bench.\n\n{left_out}\n\nMore about widgets.\n"
    )
    assert texts["guide/setup.md"] == f"# Setup\n\n{left_out}\n\n## Steps\n\nPlug the widget in.\n"
    setup = next(d for d in bundle.catalog.docs if d.source == "guide/setup.md")
    steps = next(s for s in setup.sections if s.anchor == "steps")
    body = texts["guide/setup.md"].encode("utf-8")
    assert body[steps.start : steps.end].decode("utf-8").startswith("## Steps\n")
    full = (adopted / "site" / "llms-full.txt").read_text(encoding="utf-8")
    assert "<script>" not in full and "onerror" not in full
    page = (adopted / "site" / "index.html").read_text(encoding="utf-8")
    assert "<script>track('home')</script>" in page  # the site as its authors made it


def test_a_key_path_that_cannot_be_used_is_refused_naming_it(adopted: Path, tmp_path: Path) -> None:
    not_a_key = tmp_path / "notes.txt"
    not_a_key.write_text("just some text\n", encoding="utf-8")
    missing = mkdocs(adopted, key=str(tmp_path / "gone.pem"))
    assert missing.returncode == 1
    assert (
        "ERROR   -  handbook: $HANDBOOK_SIGNING_KEY holds neither a key's PEM text (starting "
        f"-----BEGIN) nor the path of a key file (no file '{tmp_path / 'gone.pem'}' exists); "
        "set it to the contents of the file `handbook keygen` wrote, or to that file's path"
    ) in missing.stderr
    malformed = mkdocs(adopted, key=str(not_a_key))
    assert malformed.returncode == 1
    assert f"handbook: {not_a_key} ($HANDBOOK_SIGNING_KEY) is not an unencrypted PEM" in (
        malformed.stderr
    )
    secret = mkdocs(adopted, key="c2VjcmV0LXZhbHVlLW5vdC1hLWtleQ==")
    assert secret.returncode == 1
    assert "(it is not PEM text nor a file's path)" in secret.stderr
    assert "c2VjcmV0" not in secret.stderr  # a value that may be a secret is never echoed


def test_an_unreadable_key_file_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handbook.errors import KeyFormatError
    from handbook_build.config.keys import signing_key
    from handbook_build.config.settings import load_config

    site = make_site(tmp_path / "repo", workflow=None)
    assert adopt(site).exit_code == 0
    key = tmp_path / "handbook.key"
    key.write_bytes(KEY_FILE.read_bytes())
    key.chmod(0o600)

    def unreadable(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setenv("HANDBOOK_SIGNING_KEY", str(key))
    monkeypatch.setattr(Path, "read_bytes", unreadable)
    with pytest.raises(KeyFormatError) as refused:
        signing_key(load_config(site))
    assert str(refused.value) == (
        f"cannot read the signing key {key} ($HANDBOOK_SIGNING_KEY): Permission denied"
    )


def test_a_page_of_the_sites_own_llms_txt_is_left_alone_and_reported(adopted: Path) -> None:
    (adopted / "docs" / "llms.txt").write_text("# Widget Tools, by hand\n", encoding="utf-8")
    built = mkdocs(adopted, "--strict")
    assert built.returncode == 0, built.stderr
    assert (
        f"INFO    -  handbook: /llms.txt is the site's own ({adopted / 'docs'}/llms.txt); "
        "Handbook's is /bundle/llms.txt, and it adds none"
    ) in built.stderr
    assert (adopted / "site" / "llms.txt").read_text() == "# Widget Tools, by hand\n"
    assert not (adopted / "site" / "llms-full.txt").exists()
    assert (adopted / "site" / "bundle" / "llms.txt").read_text().startswith("# ")


def test_another_llms_plugin_keeps_the_site_root(tmp_path: Path) -> None:
    """mkdocs-llmstxt writes site/llms.txt after the build; Handbook adds none beside it."""
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

    from handbook_build.mkdocs_plugin import _llms_owner

    config = MkDocsConfig()
    config.plugins = {"search": object(), "llmstxt": object(), "handbook": object()}  # type: ignore[assignment]
    assert _llms_owner(Files([]), config) == "the llmstxt plugin's"
    config.plugins = {"search": object(), "handbook": object()}  # type: ignore[assignment]
    assert _llms_owner(Files([]), config) is None


def test_a_failed_build_publishes_nothing(adopted: Path) -> None:
    """A hook that fails after Handbook published (as a later plugin or the theme may),
    and a `--strict` build that MkDocs aborts: the bundle stays the one before."""
    assert mkdocs(adopted).returncode == 0
    bundle = adopted / "build" / "bundle"
    before = os.readlink(bundle)
    manifest = (bundle / "manifest.json").read_bytes()
    (adopted / "docs" / "index.md").write_text("# Widget Tools\n\nChanged.\n", encoding="utf-8")
    (adopted / "hooks.py").write_text(
        "def on_post_page(output, page, config):\n    raise RuntimeError('theme broke')\n",
        encoding="utf-8",
    )
    set_option(adopted, "plugins:\n", "hooks:\n  - hooks.py\nplugins:\n")
    failed = mkdocs(adopted)
    assert failed.returncode == 1 and "theme broke" in failed.stderr
    assert "handbook: the build failed; the bundle published before it is restored" in (
        failed.stderr
    )
    assert os.readlink(bundle) == before
    assert (bundle / "manifest.json").read_bytes() == manifest

    (adopted / "hooks.py").write_text(
        "import logging\n\ndef on_post_build(config):\n"
        "    logging.getLogger('mkdocs.hooks').warning('late warning')\n",
        encoding="utf-8",
    )
    aborted = mkdocs(adopted, "--strict")
    assert aborted.returncode == 1 and "Aborted with 1 warnings in strict mode" in aborted.stdout
    assert os.readlink(bundle) == before


def test_the_first_build_failing_leaves_no_bundle(tmp_path: Path) -> None:
    site = make_site(tmp_path / "repo", workflow=None)
    assert adopt(site).exit_code == 0
    (site / "hooks.py").write_text(
        "def on_post_build(config):\n    raise RuntimeError('deploy step broke')\n",
        encoding="utf-8",
    )
    set_option(site, "plugins:\n", "hooks:\n  - hooks.py\nplugins:\n")
    assert mkdocs(site).returncode == 1
    assert not os.path.lexists(site / "build" / "bundle")
