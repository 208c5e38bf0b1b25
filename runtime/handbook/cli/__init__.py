"""The `handbook` command.

The query commands (`list`, `get`, `search`, `collect`, `ask`, `resource`) are generated
from the tool table (`handbook.tools.table`): one command per tool, its parameters as
arguments and options, answered through `handbook.tools.dispatch` like every transport, shown
for people by `handbook.cli.render` or printed exactly with `--json`. Build commands
(`check`, `build`, …) live in `handbook_build` and are imported only when invoked, so
`handbook --help` and the query commands stay fast and work without the build side.
"""

from __future__ import annotations

import importlib
import sys

import click

from .._version import __version__
from ..errors import BundleError, KeyFormatError
from ..inbox.intake import Inbox
from ..inbox.writable import Writable
from ..tools.table import READ_TOOLS
from .inbox_options import inbox_options
from .queries import DEFAULT_BUNDLE, Sources, bundle_options, key_options, tool_command
from .serving import one_audience, serve, token
from .tool_options import exposing, tools_option

BUILD_COMMANDS = {
    "adopt": "handbook_build.commands.building:adopt",
    "check": "handbook_build.commands.building:check",
    "build": "handbook_build.commands.building:build",
    "keygen": "handbook_build.commands.building:keygen",
    "inbox": "handbook_build.commands.inbox:inbox_group",
    "pack": "handbook_build.commands.release:pack_command",
    "diff": "handbook_build.commands.release:diff_command",
    "export": "handbook_build.commands.export:export_group",
    "init": "handbook_build.commands.release:init_command",
    "invalidate": "handbook_build.commands.review:invalidate_command",
    "release": "handbook_build.commands.release:release_command",
    "publish-report": "handbook_build.commands.release:publish_report_command",
    "review": "handbook_build.commands.review:review_command",
    "reviews": "handbook_build.commands.review:reviews_command",
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


# -- where the knowledge comes from ---------------------------------------------------------


for _tool in READ_TOOLS:  # the write tools need a served inbox: `handbook serve --inbox`
    main.add_command(tool_command(_tool))


# -- the other commands ---------------------------------------------------------------------


@main.command()
@click.argument("path", required=False, metavar="[PATH]")
@click.option(
    "--bundle",
    "bundle_path",
    default=DEFAULT_BUNDLE,
    show_default=True,
    metavar="DIR",
    help="The bundle to verify when PATH is not given.",
)
@key_options
@click.option(
    "--threshold",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Distinct trusted signatures required.",
)
def verify(
    path: str | None, bundle_path: str, keys: tuple[str, ...], allow_unsigned: bool, threshold: int
) -> None:
    """Verify a bundle (PATH, or --bundle; a folder or a .tar.gz from `handbook pack`):
    signature by a trusted key, every file's size and hash, no unlisted file, and a
    catalog that agrees with its content. Exit 0, or 1 with the reason."""
    from ..bundle.archive import unpacked
    from ..bundle.local import describe, open_bundle
    from ..bundle.trust import TrustPolicy

    try:
        trust = TrustPolicy.of(keys, threshold=threshold, allow_unsigned=allow_unsigned)
        with unpacked(path or bundle_path, trust) as folder:
            bundle = open_bundle(folder, trust=trust)
            lines = describe(bundle)
    except KeyFormatError as exc:
        raise click.UsageError(f"--key: {exc}") from None
    except BundleError as exc:
        click.echo(f"refused: {exc}", err=True)
        sys.exit(1)
    for line in lines:
        click.echo(line)
    click.echo("ok")


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mcp", "openai", "anthropic", "yaml"]),
    default="mcp",
    show_default=True,
    help="mcp: the tools.json shape; openai: Chat Completions function tools (strict); "
    "anthropic: Messages API tools; yaml: the MCP shape as YAML.",
)
@click.option(
    "--output-schemas",
    is_flag=True,
    help="Add each tool's outputSchema (mcp and yaml only), as MCP serves them.",
)
@tools_option
@bundle_options
def tools(fmt: str, output_schemas: bool, tool_names: str | None, sources: Sources) -> None:
    """Print the agent tool definitions for the libraries, in the shape each ecosystem
    expects (the definitions MCP and HTTP serve), JSON one tool a line: about what an
    agent's every turn carries. Output schemas only with --output-schemas: MCP serves
    them (its clients check structured results), no other host reads them."""
    from ..tools.formats import SCHEMA_FORMATS, convert, dumps
    from ..tools.table import definitions

    if output_schemas and fmt not in SCHEMA_FORMATS:
        raise click.UsageError(
            f"--output-schemas: the {fmt} shape has no place for output schemas (its API "
            f"refuses other keys); use --format {' or '.join(SCHEMA_FORMATS)}"
        )
    served = exposing(sources.served(), tool_names)
    click.echo(dumps(convert(definitions(served.tool_context(), output_schemas), fmt)))


@main.command()
@tools_option
@inbox_options
@bundle_options
def mcp(sources: Sources, inbox: Inbox | None, tool_names: str | None) -> None:
    """Serve the libraries over MCP on stdin/stdout, for agent hosts that start it.

    Every tool of `handbook tools`, and each doc as a resource handbook://<library>/<id>.
    With --inbox, the write tools too: over stdio there is no token, so records must be
    signed with an --agent key. Bundles of one audience only: there is no token to choose
    one by (`handbook serve --tokens` serves several). Messages about the bundle go to
    stderr; stdout is the protocol stream."""
    from ..serve.mcp_stdio import run_stdio

    served = one_audience(sources)
    run_stdio(exposing(Writable(served, inbox) if inbox is not None else served, tool_names))


main.add_command(serve)
main.add_command(token)
