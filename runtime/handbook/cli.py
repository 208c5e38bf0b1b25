"""The `handbook` command.

The query commands (`list`, `get`, `search`, `collect`, `ask`, `resource`) are generated
from the tool table (`handbook.tools`): one command per tool, its parameters as
arguments and options, answered through `handbook.dispatch` like every transport, shown
for people by `handbook.render` or printed exactly with `--json`. Build commands
(`check`, `build`, …) live in `handbook_build` and are imported only when invoked, so
`handbook --help` and the query commands stay fast and work without the build side.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from . import __version__, render
from .dispatch import call, from_text
from .errors import BundleError, KeyFormatError
from .served import Served
from .signing import TRUSTED_KEYS_ENV
from .tools import TOOLS, Param, Tool

if TYPE_CHECKING:
    from .library import Library

DEFAULT_BUNDLE = "build/bundle"

BUILD_COMMANDS = {
    "check": "handbook_build.commands:check",
    "build": "handbook_build.commands:build",
    "keygen": "handbook_build.commands:keygen",
    "pack": "handbook_build.commands:pack_command",
    "diff": "handbook_build.commands:diff_command",
    "init": "handbook_build.commands:init_command",
    "release": "handbook_build.commands:release_command",
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


F = TypeVar("F", bound=Callable[..., Any])

KEY_OPTIONS: list[tuple[list[str], dict[str, Any]]] = [
    (
        ["--key", "keys"],
        {
            "multiple": True,
            "metavar": "ed25519:…",
            "help": f"A trusted public key (repeatable); also read from ${TRUSTED_KEYS_ENV}.",
        },
    ),
    (
        ["--allow-unsigned"],
        {"is_flag": True, "help": "Accept a bundle without signatures (hashes are still checked)."},
    ),
]
SOURCE_OPTIONS = [
    (
        ["--bundle", "bundle_paths"],
        {
            "multiple": True,
            "metavar": "DIR|URL",
            "help": "A bundle to read: a folder, the symlink `handbook build` publishes, or the URL of "
            "a published bundle. Repeat it to serve several libraries at once. "
            f"[default: {DEFAULT_BUNDLE}]",
        },
    ),
    *KEY_OPTIONS,
]
"""Where the knowledge comes from and whom to trust, for every command that reads it."""


def _options(specs: list[tuple[list[str], dict[str, Any]]]) -> Callable[[F], F]:
    def decorate(command: F) -> F:
        for decls, attrs in reversed(specs):
            command = click.option(*decls, **attrs)(command)
        return command

    return decorate


key_options = _options(KEY_OPTIONS)
bundle_options = _options(SOURCE_OPTIONS)


def open_served(paths: Sequence[str], keys: Sequence[str], allow_unsigned: bool) -> Served:
    """The library at each path (a `Shelf` when there are several), or exit: 2 for a
    malformed key, 1 naming the cause for a refused bundle."""
    return _open(paths, keys, allow_unsigned)[0]


def _open(
    paths: Sequence[str], keys: Sequence[str], allow_unsigned: bool
) -> tuple[Served, dict[str, Library]]:
    from .library import Library
    from .shelf import Shelf

    libraries: dict[str, Library] = {}
    for path in paths or [DEFAULT_BUNDLE]:
        try:
            libraries[path] = Library.open(path, keys, allow_unsigned=allow_unsigned)
        except KeyFormatError as exc:
            raise click.UsageError(f"--key: {exc}") from None
        except BundleError as exc:
            click.echo(f"refused: {path}: {exc}" if len(paths) > 1 else f"refused: {exc}", err=True)
            sys.exit(1)
    if len(libraries) == 1:
        return next(iter(libraries.values())), dict(libraries)
    try:
        return Shelf(libraries.values()), dict(libraries)
    except ValueError as exc:
        raise click.UsageError(f"--bundle: {exc}") from None


# -- the query commands, from the tool table -------------------------------------------------

FILTER_OPTION = click.Option(
    ["--filter", "-f", "filters"],
    multiple=True,
    metavar="FIELD=VALUE",
    help="Only docs whose frontmatter FIELD is VALUE (repeatable; list fields by membership).",
)
EXTRA_OPTIONS: dict[str, list[click.Parameter]] = {
    "resource": [
        click.Option(
            ["-o", "--output"],
            type=click.Path(dir_okay=False, writable=True),
            help="Write the verified bytes to this file.",
        )
    ]
}
"""Presentation options of one command (where to write), beside the tool's parameters."""


def _click_param(param: Param) -> click.Parameter:
    kinds = param.schema.get("type")
    if param.positional:
        return click.Argument([param.name], metavar=param.name.upper().replace("DOC_ID", "ID"))
    flags = list(param.flags or (f"--{param.name.replace('_', '-')}",))
    many = kinds == "array"
    metavar = (
        "ID=REVISION" if param.name == "revisions" else ("ID" if param.name == "ids" else None)
    )
    value_type: Any = click.INT if kinds == "integer" else click.STRING
    return click.Option(
        [*flags, param.name],
        type=value_type,
        multiple=many,
        metavar=metavar,
        help=param.description,
    )


def tool_command(tool: Tool) -> click.Command:
    """The command for one tool."""
    params: list[click.Parameter] = [_click_param(p) for p in tool.params]
    if tool.filters:
        params.append(FILTER_OPTION)
    params += EXTRA_OPTIONS.get(tool.verb, [])

    def run(
        bundle_paths: tuple[str, ...],
        keys: tuple[str, ...],
        allow_unsigned: bool,
        as_json: bool,
        **given: Any,
    ) -> None:
        options = {
            name: given.pop(name)
            for name in [o.name for o in EXTRA_OPTIONS.get(tool.verb, [])]
            if name
        }
        arguments = _arguments(tool, given)
        answer = call(open_served(bundle_paths, keys, allow_unsigned), tool.name, arguments)
        if as_json:
            click.echo(json.dumps(answer, indent=2, ensure_ascii=False))
        else:
            render.show(tool.verb, answer, options)
        if render.failed(tool.verb, answer):
            sys.exit(1)

    params += [click.Option(decls, **attrs) for decls, attrs in SOURCE_OPTIONS]
    params.append(
        click.Option(
            ["--json", "as_json"], is_flag=True, help="Print exactly the tool's answer as JSON."
        )
    )
    return click.Command(tool.verb, params=params, callback=run, help=tool.summary)


def _arguments(tool: Tool, given: dict[str, Any]) -> dict[str, Any]:
    """The tool's JSON arguments from parsed command-line values."""
    pairs: list[tuple[str, str]] = []
    arguments: dict[str, Any] = {}
    for name, value in given.items():
        if name == "filters":
            for item in value:
                field, sep, wanted = item.partition("=")
                if not sep or not field.strip():
                    raise click.BadParameter(f"{item!r} is not FIELD=VALUE", param_hint="--filter")
                arguments[field.strip()] = wanted.strip()
        elif isinstance(value, tuple):
            if name == "revisions" and any("=" not in v for v in value):
                bad = next(v for v in value if "=" not in v)
                raise click.BadParameter(f"{bad!r} is not ID=REVISION", param_hint="--revision")
            pairs += [(name, v) for v in value]
        elif value is not None:
            arguments[name] = value
    converted, _ = from_text(tool, pairs)  # list parameters only: they may repeat
    return {**arguments, **converted}


for _tool in TOOLS:
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
    from .archive import unpacked
    from .bundle import describe, open_bundle

    try:
        with unpacked(path or bundle_path) as folder:
            bundle = open_bundle(folder, keys, allow_unsigned=allow_unsigned, threshold=threshold)
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
@bundle_options
def tools(
    fmt: str, bundle_paths: tuple[str, ...], keys: tuple[str, ...], allow_unsigned: bool
) -> None:
    """Print the agent tool definitions for the libraries, in the shape each ecosystem
    expects (the same definitions MCP and HTTP serve)."""
    from .tool_formats import convert
    from .tools import definitions

    served = open_served(bundle_paths, keys, allow_unsigned)
    out = convert(definitions(served.tool_context()), fmt)
    click.echo(
        out.rstrip("\n") if isinstance(out, str) else json.dumps(out, indent=2, ensure_ascii=False)
    )


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; loopback unless you mean otherwise.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port (0: any free one).",
)
@click.option(
    "--site",
    "site_dir",
    type=click.Path(file_okay=False),
    default="build/site",
    show_default=True,
    help="The built site to serve beside the API (skipped when missing).",
)
@click.option(
    "--token",
    envvar="HANDBOOK_TOKEN",
    help="Require `Authorization: Bearer TOKEN` on the API and MCP (or $HANDBOOK_TOKEN).",
)
@click.option(
    "--reload-interval",
    type=click.FloatRange(0.1),
    default=2.0,
    show_default=True,
    help="Seconds between checks for a newly published bundle (a remote one: 60 at least).",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST",
    help="Another host name clients use to reach the server (MCP checks Host and Origin against these and loopback).",
)
@bundle_options
def serve(
    host: str,
    port: int,
    site_dir: str,
    token: str | None,
    reload_interval: float,
    allowed_hosts: tuple[str, ...],
    bundle_paths: tuple[str, ...],
    keys: tuple[str, ...],
    allow_unsigned: bool,
) -> None:
    """Serve the site, the bundle files, the JSON API and MCP over HTTP in one process.

    Several --bundle options serve several libraries at once (refs are qualified as
    library:id; each bundle is under /bundle/<library>/; the site is the first one's).
    A newly published bundle is verified and swapped in without dropping requests; one
    that fails verification is refused and the old one keeps serving. Ctrl-C stops."""
    from .server import serve as run

    served, watched = _open(bundle_paths, keys, allow_unsigned)
    site = Path(site_dir) if Path(site_dir).is_dir() else None
    if site is None:
        click.echo(f"note: no site at {site_dir}; serving the API and the bundle only", err=True)
    if host not in ("127.0.0.1", "::1", "localhost") and not token:
        click.echo(
            f"warning: listening on {host} without --token: anyone who can reach it can read the library",
            err=True,
        )
    run(
        served,
        watched,
        host=host,
        port=port,
        site=site,
        token=token,
        reload_interval=reload_interval,
        allowed_hosts=allowed_hosts,
        announce=lambda line: click.echo(line, err=True),
    )


@main.command()
@bundle_options
def mcp(bundle_paths: tuple[str, ...], keys: tuple[str, ...], allow_unsigned: bool) -> None:
    """Serve the libraries over MCP on stdin/stdout, for agent hosts that start it.

    Every tool of `handbook tools`, and each doc as a resource handbook://<library>/<id>.
    Messages about the bundle go to stderr; stdout is the protocol stream."""
    from .mcp import run_stdio

    run_stdio(open_served(bundle_paths, keys, allow_unsigned))
