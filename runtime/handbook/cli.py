"""The `handbook` command.

Query commands live with the runtime; build commands (`check`, `build`, …) live in
`handbook_build` and are imported only when invoked, so `handbook --help` and the
query commands stay fast and work on an install without the build side.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

import click

from . import __version__
from .errors import BundleError, KeyFormatError
from .signing import TRUSTED_KEYS_ENV

BUILD_COMMANDS = {
    "check": "handbook_build.commands:check",
    "build": "handbook_build.commands:build",
    "keygen": "handbook_build.commands:keygen",
}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *BUILD_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in BUILD_COMMANDS:
            module, _, attr = BUILD_COMMANDS[cmd_name].partition(":")
            try:
                command = getattr(importlib.import_module(module), attr)
            except ImportError as exc:
                raise click.UsageError(
                    f"`handbook {cmd_name}` needs the build side ({exc.name} is missing); "
                    "install the full `handbook` distribution"
                ) from None
            return command  # type: ignore[no-any-return]
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="handbook")
def main() -> None:
    """Validate, build and serve hand-written knowledge for people and AI agents."""


def key_options(command: Callable[..., None]) -> Callable[..., None]:
    """--key (repeatable) and --allow-unsigned, for every command that reads a bundle."""
    command = click.option("--allow-unsigned", is_flag=True, help="Accept a bundle without signatures (hashes are still checked).")(command)
    return click.option(
        "--key", "keys", multiple=True, metavar="ed25519:…",
        help=f"A trusted public key (repeatable); also read from ${TRUSTED_KEYS_ENV}.",
    )(command)


@main.command()
@click.argument("path", type=click.Path(exists=False), default="build/bundle")
@key_options
@click.option("--threshold", type=click.IntRange(1), default=1, show_default=True, help="Distinct trusted signatures required.")
def verify(path: str, keys: tuple[str, ...], allow_unsigned: bool, threshold: int) -> None:
    """Verify a bundle: signature by a trusted key, every file's size and hash, no
    unlisted file, and a catalog that agrees with its content. Exit 0, or 1 with the reason."""
    from .bundle import describe, open_bundle

    try:
        bundle = open_bundle(path, keys, allow_unsigned=allow_unsigned, threshold=threshold)
    except KeyFormatError as exc:
        raise click.UsageError(f"--key: {exc}") from None
    except BundleError as exc:
        click.echo(f"refused: {exc}", err=True)
        sys.exit(1)
    for line in describe(bundle):
        click.echo(line)
    click.echo("ok")
