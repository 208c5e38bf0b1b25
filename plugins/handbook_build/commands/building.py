"""The build-side CLI commands. `handbook.cli` attaches them lazily, so the query
commands work without importing any of this.

Commands raise; `BuildCommand` alone turns the errors of `errors.py` (and the runtime's
`KeyFormatError` and `BundleError`, and `OSError`) into output and an exit code, so
every command reports the same failure the same way.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.manifest import utc_seconds
from handbook.bundle.signing import SIGNING_KEY_ENV, generate_private_key
from handbook.errors import BundleError, HandbookError, KeyFormatError

from .. import pipeline
from ..config.keys import replaces_signed, signing_key
from ..config.options import DEFAULT_BUNDLE_DIR, EXPIRES
from ..config.settings import Config, load_config
from ..errors import BuildError, ConfigError, ReleaseError, ScaffoldError, UnsignedError
from ..findings import Finding, Severity, render_github, render_json, render_text
from ..rules import RULES
from ..write.bundles import build_time, expiry
from .progress import embedding_progress

FORMATS = {"text": render_text, "json": render_json, "github": render_github}
PROGRESS_MIN_FILES = 200

config_option = click.option(
    "--config",
    "config_path",
    default=".",
    metavar="PATH",
    help="The site configuration holding the `handbook` entry (mkdocs.yml, zensical.yml, "
    "zensical.toml or handbook.yml), or a folder: the first of those in it, else its "
    "Agent Skills [default: the current folder].",
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
    SkillsError (docs that are no skills)  1     "error: …"
    =====================================  ====  ======================================
    """
    if isinstance(exc, (KeyFormatError, ScaffoldError)):
        raise click.UsageError(str(exc), ctx) from None
    if isinstance(exc, ConfigError):
        fmt = ctx.params.get("fmt", "text")
        _emit(exc.findings, fmt, "")
        if fmt == "text":
            where = exc.findings[0].path if exc.findings else ctx.params["config_path"]
            click.echo(f"{where}: configuration error, nothing checked", err=True)
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


def explain_rules(findings: Sequence[Finding]) -> str:
    """What each rule that spoke is for, and where it is documented."""
    codes = sorted({f.code for f in findings})
    lines = [
        f"{code} {RULES[code].name}: {RULES[code].summary} (rules reference: #{RULES[code].anchor})"
        for code in codes
    ]
    return "".join(f"{line}\n" for line in ["", "Rules that spoke:", *lines]) if lines else ""


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
@click.option(
    "--explain",
    is_flag=True,
    help="Also list the notices (what was derived or normalised, and by which rule), and "
    "say what each rule that spoke is for.",
)
def check(ctx: click.Context, config_path: str, fmt: str, strict: bool, explain: bool) -> None:
    """Validate every doc and snippet of a library.

    Exit 0 when there are no errors, 1 when there are (or warnings under --strict),
    2 when the configuration or the command line is wrong. Notices never fail a check;
    text and GitHub output list them with --explain (JSON always holds them).
    """
    config = load_config(config_path)
    with progress_bar("Checking") as progress:
        result = pipeline.check(config, progress)
    prefix = os.path.relpath(config.docs_dir) + "/"
    shown = result.findings
    if fmt != "json" and not explain:
        shown = [f for f in shown if f.severity is not Severity.NOTICE]
    _emit(shown, fmt, prefix)
    if explain and fmt == "text":
        click.echo(explain_rules(result.findings), nl=False)
    summary = (
        f"{_plural(result.files, 'file')} checked ({_plural(len(result.docs), 'doc')}): "
        f"{_plural(result.errors, 'error')}, {_plural(result.warnings, 'warning')}"
    )
    if result.notices:
        unlisted = not explain and fmt != "json"
        summary += f", {_plural(result.notices, 'notice')}" + (
            " (--explain lists them)" if unlisted else ""
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
    "[default: handbook.bundle_dir, else build/bundle beside the configuration].",
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
@click.option(
    "--explain",
    is_flag=True,
    help="List every finding (notices too, and warnings of a site that is not strict) "
    "and say what each rule that spoke is for; without it they are counted.",
)
def build(
    config_path: str,
    out: str | None,
    key_file: str | None,
    strict: bool,
    expires: str | None,
    explain: bool,
) -> None:
    """Check the library, then write, sign, verify and publish its bundle.

    Nothing is written when the check fails; a failed or interrupted build leaves the
    previous bundle in place. Errors and warnings are listed, notices counted (all of
    them with --explain); a site with `strict: false` (an adopted site) has its warnings
    counted too. Without a key the bundle is unsigned (a warning), unless --strict is
    given, or $CI is set and the configuration's `signing` is `required` (the default
    but for an adopted site): then the build refuses.
    """
    config = _with_expiry(load_config(config_path), expires)
    out = out or os.path.relpath(config.bundle_dir or DEFAULT_BUNDLE_DIR)
    in_ci = bool(os.environ.get("CI")) and config.signing_required
    key = _signing_key(config, key_file, strict or in_ci, Path(out))
    started = time.perf_counter()
    with progress_bar("Checking") as progress, embedding_progress() as embedding:
        built = pipeline.build(
            config, Path(out), key, strict=strict, progress=progress, embedding=embedding
        )
    _show(built.findings, explain, strict or config.strict_warnings)
    bundle = built.bundle
    signed = bundle.manifest.signed
    files = bundle.listing()
    size = sum(f.bytes for f in files.values())
    click.echo(
        f"built {signed.library} {signed.version}: {signed.docs} docs, "
        f"{len(files) + 1} files, "
        f"{size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s -> {out}"
    )
    click.echo(
        f"signature: {bundle.signature_state}"
        + (f" (key id {bundle.signed_by[0][:16]})" if bundle.signed_by else "")
    )
    for audience, other in built.bundles.items():
        assert config.audiences is not None
        where = out if other is bundle else os.path.relpath(config.audiences.folder(audience))
        click.echo(f"audience {audience}: {other.manifest.signed.docs} docs -> {where}")


def _show(findings: Sequence[Finding], explain: bool, warnings: bool) -> None:
    """Errors (and `warnings`) as lines, the rest counted; every finding with `explain`."""
    listed = {Severity.ERROR, Severity.WARN, Severity.NOTICE}
    if not explain:
        listed = {Severity.ERROR, Severity.WARN} if warnings else {Severity.ERROR}
    click.echo(render_text([f for f in findings if f.severity in listed]), nl=False)
    if explain:
        click.echo(explain_rules(findings), nl=False)
    elif unlisted := _counted([f for f in findings if f.severity not in listed]):
        click.echo(f"{unlisted} (--explain lists them)")


def _with_expiry(config: Config, expires: str | None) -> Config:
    """`config` with `--expires`, checked, in place of the configured expiry."""
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
        if expires.endswith("Z") and expiry(build_time(), expires) <= build_time():
            raise click.BadParameter(
                f"{expires} is in the past: readers would refuse the bundle", param_hint="--expires"
            )
        config = dataclasses.replace(config, expires=expires)
    return config


def _signing_key(
    config: Config, key_file: str | None, required: bool, out: Path
) -> Ed25519PrivateKey | None:
    key, _, warning = signing_key(config, key_file)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if key is not None:
        return key
    if required:
        raise UnsignedError(
            f"no signing key; pass --key KEYFILE, set ${SIGNING_KEY_ENV} or handbook.signing_key "
            "(unsigned builds are refused under --strict and in CI)"
        )
    replacing = replaces_signed(out)
    click.echo(
        f"warning: {replacing}"
        if replacing
        else f"warning: no signing key (--key, ${SIGNING_KEY_ENV} or handbook.signing_key); "
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


def _counted(findings: Sequence[Finding]) -> str:
    """`3 warnings, 120 notices`: how many of `findings` there are of each severity."""
    return ", ".join(
        _plural(n, severity.noun)
        for severity in Severity
        if (n := sum(1 for f in findings if f.severity is severity))
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@click.command(name="adopt", cls=BuildCommand)
@config_option
@click.option("--write", is_flag=True, help="Write the pinned frontmatter into the pages.")
def adopt(config_path: str, write: bool) -> None:
    """Pin the fields adoption derives (id, title, kind, summary) into the pages, so ids
    stay when files move.

    Shows what would change as a diff; writes only with --write. Changes no other
    byte, never touches a file that does not parse, and running it twice changes
    nothing. Skills keep the frontmatter the Agent Skills specification defines.
    """
    from ..tasks import pin

    config = load_config(config_path)
    with progress_bar("Checking") as progress:
        planned = pin.plan(config, progress)
    prefix = os.path.relpath(config.docs_dir) + "/"
    if not write:
        for change in planned.changes:
            click.echo(
                change.diff().replace(" a/", f" a/{prefix}", 1).replace(" b/", f" b/{prefix}", 1),
                nl=False,
            )
    for path, why in planned.skipped:
        click.echo(f"left alone: {prefix}{path}: {why}", err=True)
    if planned.skills:
        click.echo(
            f"{_plural(planned.skills, 'skill')} keep the frontmatter of the Agent Skills specification"
        )
    fields = sum(len(c.fields) for c in planned.changes)
    files = _plural(len(planned.changes), "page")
    if not planned.changes:
        click.echo("nothing to pin: every page has its id, title, kind and summary")
    elif write:
        pin.write(config, planned.changes)
        click.echo(f"pinned {_plural(fields, 'field')} into {files}")
    else:
        click.echo(
            f"{files} would get {_plural(fields, 'field')}; `handbook adopt --write` writes them"
        )
