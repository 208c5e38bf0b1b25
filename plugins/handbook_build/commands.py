"""The build-side CLI commands. `handbook.cli` attaches them lazily, so the query
commands work without importing any of this.

Commands raise; `BuildCommand` alone turns the errors of `errors.py` (and the runtime's
`KeyFormatError` and `BundleError`, and `OSError`) into output and an exit code, so
every command reports the same failure the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.errors import BundleError, HandbookError, KeyFormatError
from handbook.manifest import utc_seconds
from handbook.signing import SIGNING_KEY_ENV, generate_private_key

from . import pipeline
from .config import Config, load_config
from .errors import BuildError, ConfigError, ReleaseError, ScaffoldError, UnsignedError
from .findings import Finding, render_github, render_json, render_text
from .options import DEFAULT_BUNDLE_DIR, EXPIRES

FORMATS = {"text": render_text, "json": render_json, "github": render_github}
PROGRESS_MIN_FILES = 200

config_option = click.option(
    "--config",
    "config_path",
    default="mkdocs.yml",
    show_default=True,
    metavar="PATH",
    help="The mkdocs.yml whose `handbook` plugin entry configures the library.",
)


class BuildCommand(click.Command):
    """A build-side command: what it raises on purpose is reported by `_fail`."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (HandbookError, OSError) as exc:
            _fail(ctx, exc)


def _fail(ctx: click.Context, exc: HandbookError | OSError) -> NoReturn:
    """Report `exc` and exit with its code, the same way for every command:

    =====================================  ====  ======================================
    ConfigError                            2     its findings, then what was not done
    KeyFormatError, ScaffoldError          2     click's usage error
    BuildError                             1     the findings; "… nothing written"
    BundleError, ReleaseError              1     "refused: …"
    UnsignedError, PublishError, OSError   1     "error: …"
    =====================================  ====  ======================================
    """
    if isinstance(exc, (KeyFormatError, ScaffoldError)):
        raise click.UsageError(str(exc), ctx) from None
    if isinstance(exc, ConfigError):
        fmt = ctx.params.get("fmt", "text")
        _emit(exc.findings, fmt, "")
        if fmt == "text":
            click.echo(
                f"{ctx.params['config_path']}: configuration error, nothing checked", err=True
            )
        ctx.exit(2)
    if isinstance(exc, BuildError):
        click.echo(render_text(exc.findings), nl=False)
        click.echo(
            f"{exc.docs} docs checked: {_plural(exc.errors, 'error')}, "
            f"{_plural(exc.warnings, 'warning')}; nothing written",
            err=True,
        )
    elif isinstance(exc, (BundleError, ReleaseError)):
        click.echo(f"refused: {exc}", err=True)
    else:
        click.echo(f"error: {exc}", err=True)
    ctx.exit(1)


def _emit(findings: Sequence[Finding], fmt: str, prefix: str) -> None:
    if fmt == "github":
        click.echo(render_github(findings, prefix), nl=False)
    else:
        click.echo(FORMATS[fmt](findings), nl=False)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr when it is a terminal and the work is large, else None."""
    if not sys.stderr.isatty():
        yield None
        return
    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and total >= PROGRESS_MIN_FILES:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        if bar is not None:
            bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


@click.command(cls=BuildCommand)
@click.pass_context
@config_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default="text",
    show_default=True,
    help="text: `path:line:col: CODE message`; json: a list of findings; "
    "github: workflow annotations.",
)
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
def check(ctx: click.Context, config_path: str, fmt: str, strict: bool) -> None:
    """Validate every doc and snippet of a library.

    Exit 0 when there are no errors, 1 when there are (or warnings under --strict),
    2 when the configuration or the command line is wrong.
    """
    config = load_config(config_path)
    with progress_bar("Checking") as progress:
        result = pipeline.check(config, progress)
    prefix = os.path.relpath(config.docs_dir) + "/"
    _emit(result.findings, fmt, prefix)
    summary = (
        f"{_plural(result.files, 'file')} checked ({_plural(len(result.docs), 'doc')}): "
        f"{_plural(result.errors, 'error')}, {_plural(result.warnings, 'warning')}"
    )
    if strict and result.warnings and not result.errors:
        summary += " (--strict: warnings fail)"
    click.echo(summary, err=fmt != "text")
    if result.failed(strict):
        ctx.exit(1)


@click.command(cls=BuildCommand)
@config_option
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the bundle is published (a symlink to an immutable version folder) "
    "[default: handbook.bundle_dir, else build/bundle beside mkdocs.yml].",
)
@click.option(
    "--key",
    "key_file",
    type=click.Path(dir_okay=False),
    metavar="KEYFILE",
    help=f"Private key to sign with [default: ${SIGNING_KEY_ENV} (the key file's contents), "
    "else the handbook.signing_key file].",
)
@click.option("--strict", is_flag=True, help="Fail on warnings, and refuse to build unsigned.")
@click.option(
    "--expires",
    metavar="90d|12h|TIME",
    help="Readers refuse the bundle after this (a duration after the build, "
    "or a UTC time like 2027-01-31T00:00:00Z) [default: handbook.expires, else never].",
)
def build(
    config_path: str, out: str | None, key_file: str | None, strict: bool, expires: str | None
) -> None:
    """Check the library, then write, sign, verify and publish its bundle.

    Nothing is written when the check fails; a failed or interrupted build leaves the
    previous bundle in place. Without a key the bundle is unsigned (a warning), unless
    --strict is given or $CI is set: then the build refuses.
    """
    config = load_config(config_path)
    if expires is not None:
        if not EXPIRES.fullmatch(expires):
            raise click.BadParameter(
                f"{expires!r} is not a duration like 90d or 12h, "
                "or a UTC time like 2027-01-31T00:00:00Z",
                param_hint="--expires",
            )
        if expires.endswith("Z") and utc_seconds(expires) is None:
            raise click.BadParameter(
                f"{expires} is not a real time (check the month, day and hour)",
                param_hint="--expires",
            )
        if (
            expires.endswith("Z")
            and pipeline.expiry(pipeline.build_time(), expires) <= pipeline.build_time()
        ):
            raise click.BadParameter(
                f"{expires} is in the past: readers would refuse the bundle", param_hint="--expires"
            )
        config = dataclasses.replace(config, expires=expires)
    key = _signing_key(config, key_file, required=strict or bool(os.environ.get("CI")))
    out = out or os.path.relpath(config.bundle_dir or DEFAULT_BUNDLE_DIR)
    started = time.perf_counter()
    with progress_bar("Checking") as progress:
        built = pipeline.build(config, Path(out), key, strict=strict, progress=progress)
    click.echo(render_text(built.findings), nl=False)
    bundle = built.bundle
    signed = bundle.manifest.signed
    size = sum(f.bytes for f in signed.files.values())
    click.echo(
        f"built {signed.library} {signed.version}: {signed.docs} docs, "
        f"{len(signed.files) + 1} files, "
        f"{size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s -> {out}"
    )
    click.echo(
        f"signature: {bundle.signature_state}"
        + (f" (key id {bundle.signed_by[0][:16]})" if bundle.signed_by else "")
    )


def _signing_key(config: Config, key_file: str | None, required: bool) -> Ed25519PrivateKey | None:
    key, _ = pipeline.signing_key(config, key_file)
    if key is not None:
        return key
    if required:
        raise UnsignedError(
            f"no signing key; pass --key KEYFILE, set ${SIGNING_KEY_ENV} or handbook.signing_key "
            "(unsigned builds are refused under --strict and in CI)"
        )
    click.echo(
        f"warning: no signing key (--key, ${SIGNING_KEY_ENV} or handbook.signing_key); "
        "the bundle will be unsigned",
        err=True,
    )
    return None


@click.command(cls=BuildCommand)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    required=True,
    metavar="KEYFILE",
    help="Where to write the new private key (mode 0600; never overwritten).",
)
def keygen(out: str) -> None:
    """Create an Ed25519 signing key and print its public key.

    Keep the key file secret (a CI secret, HANDBOOK_SIGNING_KEY); give the printed
    `ed25519:…` public key to everyone who loads the bundle.
    """
    pem, public = generate_private_key()
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise click.UsageError(f"{out} already exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise click.UsageError(f"cannot create {out}: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    click.echo(str(public))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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
    from .pack import pack

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
    from handbook.archive import unpacked
    from handbook.bundle import open_bundle

    from .diff import diff

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
def init_command(
    folder: str, library: str | None, title: str | None, install_from: str | None
) -> None:
    """Start a new library in FOLDER: mkdocs.yml with the plugin, example docs, a
    .gitignore and a GitHub workflow that checks pushes and releases version tags.
    Nothing is overwritten."""
    from .scaffold import init

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
    from .release import release

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
