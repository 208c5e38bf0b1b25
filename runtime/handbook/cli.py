"""The `handbook` command.

Query commands live with the runtime; build commands (`check`, `build`, …) live in
`handbook_build` and are imported only when invoked, so `handbook --help` and the
query commands stay fast and work on an install without the build side.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__, render
from .errors import BundleError, KeyFormatError
from .signing import TRUSTED_KEYS_ENV

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


def key_options(command: Callable[..., None]) -> Callable[..., None]:
    """--key (repeatable) and --allow-unsigned, for every command that reads a bundle."""
    command = click.option(
        "--allow-unsigned",
        is_flag=True,
        help="Accept a bundle without signatures (hashes are still checked).",
    )(command)
    return click.option(
        "--key",
        "keys",
        multiple=True,
        metavar="ed25519:…",
        help=f"A trusted public key (repeatable); also read from ${TRUSTED_KEYS_ENV}.",
    )(command)


def bundle_options(command: Callable[..., None]) -> Callable[..., None]:
    """--bundle, --key and --allow-unsigned: how a command finds and trusts its bundle."""
    command = key_options(command)
    return click.option(
        "--bundle",
        "bundle_path",
        default=DEFAULT_BUNDLE,
        show_default=True,
        metavar="DIR",
        help="The bundle to read (a folder, or the symlink handbook build publishes).",
    )(command)


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print exactly the handler's answer as JSON."
)


@main.command()
@click.argument("path", required=False, metavar="[PATH]")
@bundle_options
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


@main.command(name="list")
@click.option(
    "--query",
    "-q",
    help="Free text ranked by relevance (ids, keywords, aliases, model numbers hit too).",
)
@click.option(
    "--filter",
    "-f",
    "filters",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Only docs whose frontmatter FIELD is VALUE (repeatable; list fields by membership).",
)
@click.option("--limit", "-n", type=int, default=20, show_default=True, help="Most docs to show.")
@bundle_options
@json_option
def list_docs(
    query: str | None,
    filters: tuple[str, ...],
    limit: int,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """List the library's docs, optionally filtered and ranked by a query."""
    parsed = _pairs(filters, "--filter")
    answer = _library(bundle_path, keys, allow_unsigned).list(query=query, limit=limit, **parsed)
    _print(answer, as_json, render.doc_list)


@main.command()
@click.argument("doc_id", metavar="ID")
@click.option("--section", "-s", help="One section, by its title or anchor.")
@click.option(
    "--offset", type=click.IntRange(0), default=0, help="Continue a long doc from a next_offset."
)
@click.option("--revision", help="Show the doc only if it is still at this exact revision.")
@bundle_options
@json_option
def get(
    doc_id: str,
    section: str | None,
    offset: int,
    revision: str | None,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """Show one doc (or one section of it) as rendered markdown with its metadata."""
    answer = _library(bundle_path, keys, allow_unsigned).get(
        doc_id, section=section, offset=offset, revision=revision
    )
    _print(answer, as_json, render.doc)


@main.command()
@click.argument("query")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="Most hits to show.")
@bundle_options
@json_option
def search(
    query: str,
    limit: int,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """Search every section's text (lunr query syntax: +must -not word~1 pre*)."""
    answer = _library(bundle_path, keys, allow_unsigned).search(query, limit=limit)
    _print(answer, as_json, render.hits)


@main.command()
@click.option("--query", "-q", help="Select and rank docs by this query.")
@click.option(
    "--id",
    "ids",
    multiple=True,
    metavar="ID",
    help="A doc id or library:id to read (repeatable; kept in this order).",
)
@click.option(
    "--revision",
    "revisions",
    multiple=True,
    metavar="ID=REVISION",
    help="Insist on this exact revision of a doc (repeatable).",
)
@click.option(
    "--filter",
    "-f",
    "filters",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Only docs whose FIELD is VALUE (repeatable).",
)
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="Most docs to return.")
@click.option(
    "--max-bytes",
    type=int,
    default=32_000,
    show_default=True,
    help="Budget for the returned content, in UTF-8 bytes.",
)
@bundle_options
@json_option
def collect(
    query: str | None,
    ids: tuple[str, ...],
    revisions: tuple[str, ...],
    filters: tuple[str, ...],
    limit: int,
    max_bytes: int,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """Read several docs at once within a byte budget; every doc left out is listed
    with the reason."""
    answer = _library(bundle_path, keys, allow_unsigned).collect(
        query=query,
        ids=list(ids) or None,
        revisions=_pairs(revisions, "--revision") or None,
        limit=limit,
        max_bytes=max_bytes,
        **_pairs(filters, "--filter"),
    )
    _print(answer, as_json, render.collected)


@main.command()
@click.argument("doc_id", metavar="ID")
@click.argument("path")
@click.option("--revision", help="Only while the doc is at this exact revision.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the verified bytes to this file.",
)
@bundle_options
@json_option
def resource(
    doc_id: str,
    path: str,
    revision: str | None,
    output: str | None,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """Print (or write with -o) a file attached to a folder doc, as verified bytes."""
    import base64

    answer = _library(bundle_path, keys, allow_unsigned).resource(doc_id, path, revision=revision)
    if as_json or not answer.get("found"):
        _print(answer, as_json, lambda a: render.doc(a))
        return
    data = (
        answer["content"].encode("utf-8")
        if "content" in answer
        else base64.b64decode(answer["content_base64"])
    )
    if output:
        Path(output).write_bytes(data)
        click.echo(
            f"wrote {answer['path']} ({answer['bytes']:,} bytes, sha256 {answer['sha256'][:16]}…) to {output}",
            err=True,
        )
    elif "content" in answer:
        click.echo(answer["content"], nl=False)
    else:
        raise click.UsageError(
            f"{answer['path']} is binary ({answer['media_type']}); write it with -o FILE"
        )


@main.command()
@click.argument("question")
@click.option(
    "--limit", "-n", type=int, default=3, show_default=True, help="Most passages to quote."
)
@bundle_options
@json_option
def ask(
    question: str,
    limit: int,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    as_json: bool,
) -> None:
    """Answer a question by quoting the library (grounded), or say it cannot
    (insufficient). Never generated text."""
    answer = _library(bundle_path, keys, allow_unsigned).ask(question, limit=limit)
    _print(answer, as_json, render.answer)
    if answer.get("evidence_state") != "grounded":
        sys.exit(1)


def _pairs(items: tuple[str, ...], option: str) -> dict[str, str]:
    form = "FIELD=VALUE" if option == "--filter" else "ID=REVISION"
    parsed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r} is not {form}", param_hint=option)
        parsed[name.strip()] = value.strip()
    return parsed


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mcp", "openai", "anthropic", "yaml"]),
    default="mcp",
    show_default=True,
    help="mcp: tools.json as is; openai: Chat Completions function tools (strict); anthropic: Messages API tools; yaml: the MCP shape as YAML.",
)
@bundle_options
def tools(fmt: str, bundle_path: str, keys: tuple[str, ...], allow_unsigned: bool) -> None:
    """Print the library's agent tool definitions, from its verified tools.json, in
    the shape each ecosystem expects."""
    from .layout import TOOLS
    from .tools import convert

    library = _library(bundle_path, keys, allow_unsigned)
    definitions = json.loads(library.bundle.read(TOOLS))["tools"]
    out = convert(definitions, fmt)
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
    help="Seconds between checks for a newly published bundle.",
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
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
) -> None:
    """Serve the site, the bundle files, the JSON API and MCP over HTTP in one process.

    A newly published bundle at --bundle is verified and swapped in without dropping
    requests; one that fails verification is refused and the old one keeps serving."""
    from .http import serve as run

    library = _library(bundle_path, keys, allow_unsigned)
    site = Path(site_dir) if Path(site_dir).is_dir() else None
    if site is None:
        click.echo(f"note: no site at {site_dir}; serving the API and the bundle only", err=True)
    if host not in ("127.0.0.1", "::1", "localhost") and not token:
        click.echo(
            f"warning: listening on {host} without --token: anyone who can reach it can read the library",
            err=True,
        )
    run(
        library,
        bundle_path,
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
def mcp(bundle_path: str, keys: tuple[str, ...], allow_unsigned: bool) -> None:
    """Serve the library over MCP on stdin/stdout, for agent hosts that start it.

    Tools knowledge_list, knowledge_get and knowledge_search, and each doc as a resource
    handbook://<library>/<id>. Messages about the bundle go to stderr; stdout is the
    protocol stream."""
    from .mcp import run_stdio

    run_stdio(_library(bundle_path, keys, allow_unsigned))


def _library(path: str, keys: tuple[str, ...], allow_unsigned: bool) -> Library:
    from .library import Library

    try:
        return Library.open(path, keys, allow_unsigned=allow_unsigned)
    except KeyFormatError as exc:
        raise click.UsageError(f"--key: {exc}") from None
    except BundleError as exc:
        click.echo(f"refused: {exc}", err=True)
        sys.exit(1)


def _print(answer: dict[str, Any], as_json: bool, show: Callable[[dict[str, Any]], None]) -> None:
    """The answer as JSON or for people; exit 1 when it is an error or a miss."""
    if as_json:
        click.echo(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        show(answer)
    if answer.get("error") or answer.get("found") is False:
        sys.exit(1)
