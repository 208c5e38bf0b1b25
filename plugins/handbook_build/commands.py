"""The build-side CLI commands. `handbook.cli` attaches them lazily, so the query
commands work without importing any of this."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import click

from . import pipeline
from .config import Config, ConfigError, load_config
from .findings import Finding, render_github, render_json, render_text

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


def load_or_exit(config_path: str, fmt: str = "text") -> Config:
    """The configuration, or its findings printed and exit 2 (a usage error)."""
    try:
        return load_config(config_path)
    except ConfigError as exc:
        _emit(exc.findings, fmt, "")
        if fmt == "text":
            click.echo(f"{config_path}: configuration error, nothing checked", err=True)
        sys.exit(2)


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


@click.command()
@config_option
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text", show_default=True,
              help="text: `path:line:col: CODE message`; json: a list of findings; github: workflow annotations.")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
def check(config_path: str, fmt: str, strict: bool) -> None:
    """Validate every doc and snippet of a library.

    Exit 0 when there are no errors, 1 when there are (or warnings under --strict),
    2 when the configuration or the command line is wrong.
    """
    config = load_or_exit(config_path, fmt)
    with progress_bar("Checking") as progress:
        result = pipeline.check(config, progress)
    prefix = os.path.relpath(config.docs_dir) + "/"
    _emit(result.findings, fmt, prefix)
    summary = f"{len(result.docs)} docs checked: {_plural(result.errors, 'error')}, {_plural(result.warnings, 'warning')}"
    if strict and result.warnings and not result.errors:
        summary += " (--strict: warnings fail)"
    click.echo(summary, err=fmt != "text")
    sys.exit(1 if result.failed(strict) else 0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
