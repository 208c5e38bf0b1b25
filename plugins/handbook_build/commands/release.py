"""The release commands: `init`, `pack`, `diff`, `release` and `publish-report`. Like every build command
they raise, and `commands.BuildCommand` reports and exits."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import click

from handbook.bundle.signing import SIGNING_KEY_ENV

from .building import BuildCommand, config_option


@click.command(name="pack", cls=BuildCommand)
@click.argument(
    "bundle", type=click.Path(exists=True, file_okay=False), default="build/bundle", required=False
)
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    metavar="FILE.tar.gz",
    help="The archive to write (replaced atomically).",
)
def pack_command(bundle: str, out: str) -> None:
    """Pack a bundle (default build/bundle) into a deterministic .tar.gz.

    The bundle is verified first (every hash); the same bundle always gives the same
    bytes, so the archive's sha256 can be published beside it."""
    from ..tasks.pack import pack

    if not out.endswith((".tar.gz", ".tgz")):
        raise click.UsageError(f"{out}: the archive name must end in .tar.gz")
    verified = pack(bundle, out)
    digest = hashlib.sha256(Path(out).read_bytes()).hexdigest()
    signed = verified.manifest.signed
    click.echo(f"packed {signed.library} {signed.version} ({signed.docs} docs) -> {out}")
    click.echo(f"sha256 {digest}")


@click.command(name="diff", cls=BuildCommand)
@click.argument("old")
@click.argument("new")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {bump, reasons, added, removed, changed, contract} as JSON.",
)
@click.option(
    "--key",
    "keys",
    multiple=True,
    metavar="ed25519:…",
    help="A trusted public key (repeatable); unsigned bundles are compared too.",
)
def diff_command(old: str, new: str, as_json: bool, keys: tuple[str, ...]) -> None:
    """What changed for agents between two bundles (folders or archives), and the
    version bump it calls for: major, minor, patch or none."""
    from handbook.bundle.archive import unpacked
    from handbook.bundle.local import open_bundle

    from ..tasks.diff import diff

    with unpacked(old) as old_dir, unpacked(new) as new_dir:
        report = diff(
            open_bundle(old_dir, keys, allow_unsigned=True).catalog,
            open_bundle(new_dir, keys, allow_unsigned=True).catalog,
        )
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    click.echo(
        f"{report['old']['library']} {report['old']['version']} -> "
        f"{report['new']['library']} {report['new']['version']}: "
        f"suggested bump {report['bump'].upper()}"
    )
    for reason in report["reasons"]:
        click.echo(f"  - {reason}")
    for change in report["changed"]:
        details = [f"+#{a}" for a in change["sections_added"]] + [
            f"-#{a}" for a in change["sections_removed"]
        ]
        details += [
            f"{field}: {old_value!r} -> {new_value!r}"
            for field, (old_value, new_value) in change["metadata"].items()
        ]
        click.echo(f"  changed {change['id']}" + (f" ({'; '.join(details)})" if details else ""))


@click.command(name="init", cls=BuildCommand)
@click.argument("folder", type=click.Path(file_okay=False), default=".")
@click.option("--name", "library", help="The library's name (default: from the folder's name).")
@click.option("--title", help="The site's title (default: from the name).")
@click.option(
    "--install-from",
    metavar="SPEC",
    help="The pip requirement the workflow installs Handbook with: "
    "git+https://host/org/handbook@<commit or tag>, a wheel URL, or handbook==<version> "
    "from your index [default: the commit this Handbook runs from, when a git remote has it].",
)
@click.option(
    "--adopt",
    is_flag=True,
    help="Make the existing site (mkdocs.yml, zensical.yml/.toml) or Agent Skills folder "
    "in FOLDER a library, as it stands: add the `handbook` entry, nothing else of it.",
)
@click.option(
    "--workflow/--no-workflow",
    default=None,
    help="With --adopt: write Handbook's workflow into the repository root's "
    ".github/workflows even beside a workflow that already builds the docs, or never "
    "[default: only when no workflow builds the docs].",
)
def init_command(
    folder: str,
    library: str | None,
    title: str | None,
    install_from: str | None,
    adopt: bool,
    workflow: bool | None,
) -> None:
    """Start a new library in FOLDER: mkdocs.yml with the plugin, example docs, a
    .gitignore and a GitHub workflow that checks pushes and releases version tags.
    Nothing is overwritten.

    With --adopt, FOLDER already holds a site or skills: its configuration gains the
    `handbook` entry (or a handbook.yml beside it), missing frontmatter is derived at
    every check, the library is named for its site_name, and the workflow is written at
    the repository's root unless a workflow there builds the docs already."""
    from ..tasks.scaffold import init

    if adopt:
        from ..tasks.adopt_site import adopt_site

        adopted = adopt_site(Path(folder), library, install_from, workflow)
        for path in adopted.changed:
            click.echo(f"added the handbook entry to {path}")
        for path in adopted.written:
            click.echo(f"wrote {path}")
        for note in adopted.notes:
            click.echo(f"note: {note}")
        click.echo(
            f"next: cd {folder} && handbook check --explain (what was derived, and from what); "
            "handbook adopt to preview pinning it into the pages"
        )
        return

    if workflow is not None:
        raise click.UsageError("--workflow and --no-workflow go with --adopt")
    started = init(Path(folder), library, title, install_from)
    for path in started.files:
        click.echo(f"wrote {path}")
    click.echo(f"the workflow installs Handbook with: {started.install_from}")
    click.echo(
        f"next: cd {folder} && handbook check && mkdocs serve; "
        "then `handbook keygen --out handbook.key` "
        "and store its contents as the repository secret HANDBOOK_SIGNING_KEY"
    )


@click.command(name="release", cls=BuildCommand)
@click.argument("version", required=False)
@click.option("--major", "part", flag_value="major", help="Bump the major version.")
@click.option("--minor", "part", flag_value="minor", help="Bump the minor version.")
@click.option("--patch", "part", flag_value="patch", help="Bump the patch version.")
@config_option
@click.option(
    "--key",
    "key_file",
    type=click.Path(dir_okay=False),
    metavar="KEYFILE",
    help=f"Private key to sign with [default: ${SIGNING_KEY_ENV}, else handbook.signing_key].",
)
@click.option(
    "--branch", default="main", show_default=True, help="The only branch releases are made from."
)
@click.option("--push", is_flag=True, help="Push the branch and the tag to the remote afterwards.")
@click.option("--remote", default="origin", show_default=True, help="The remote --push pushes to.")
def release_command(
    version: str | None,
    part: str | None,
    config_path: str,
    key_file: str | None,
    branch: str,
    push: bool,
    remote: str,
) -> None:
    """Release the library: write VERSION (or bump it with --major/--minor/--patch)
    into mkdocs.yml, build strictly, sign, pack, commit and tag vVERSION.

    Refused, with nothing changed, off the release branch, on a dirty tree, onto an
    existing tag, without a signing key, or when the version does not increase."""
    from ..tasks.release import release

    if (version is None) == (part is None):
        raise click.UsageError("give a VERSION or one of --major, --minor, --patch")
    done = release(
        Path(config_path), version, part, branch=branch, push=push, key_file=key_file, remote=remote
    )
    digest = hashlib.sha256(done.archive.read_bytes()).hexdigest()
    click.echo(
        f"released {done.tag} (commit {done.commit[:12]}); archive {done.archive} sha256 {digest}"
    )
    click.echo("pushed" if done.pushed else f"not pushed: git push {remote} {branch} {done.tag}")


@click.command(name="publish-report", cls=BuildCommand)
@click.argument("report", type=click.Path(dir_okay=False))
@click.option(
    "--bundle",
    type=click.Path(exists=True, file_okay=False),
    default="build/bundle",
    show_default=True,
    help="The bundle that was published: its manifest names the library, version and audience.",
)
@click.option(
    "--uploaded", type=click.IntRange(0), required=True, help="Files the pipeline uploaded."
)
@click.option(
    "--failed", type=click.IntRange(0), default=0, show_default=True, help="Files that failed."
)
@click.option("--message", default="", help="What the pipeline has to say, in a line or two.")
def publish_report_command(
    report: str, bundle: str, uploaded: int, failed: int, message: str
) -> None:
    """Write REPORT, the publish report a server shows in its status (`handbook serve
    --publish-report REPORT`): which bundle was published, when, and what the pipeline
    said. A server labels it `reported`, never `verified`."""
    from handbook.bundle.layout import MANIFEST
    from handbook.bundle.manifest import Manifest, utc_time
    from handbook.bundle.publish_report import ReportError, make_report, write_report

    signed = Manifest.from_bytes((Path(bundle) / MANIFEST).read_bytes()).signed
    try:
        made = make_report(
            signed.library,
            signed.version,
            utc_time(time.time()),
            uploaded,
            failed,
            message,
            signed.audience,
        )
    except ReportError as exc:
        raise click.UsageError(str(exc)) from None
    write_report(report, made)
    click.echo(
        f"reported {signed.library} {signed.version}: {uploaded} uploaded, {failed} failed -> {report}"
    )
