"""The `handbook` command.

Query commands live with the runtime; build commands (`check`, `build`, …) live in
`handbook_build` and are imported only when invoked, so `handbook --help` and the
query commands stay fast and work on an install without the build side.
"""

from __future__ import annotations

import importlib

import click

from . import __version__

BUILD_COMMANDS = {
    "check": "handbook_build.commands:check",
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
