"""Where the command line's knowledge comes from, and its query commands.

Every command that reads knowledge takes the same `--bundle` (repeatable: several
libraries on one shelf), `--key` and `--allow-unsigned`. The query commands (`list`,
`get`, `search`, `collect`, `ask`, `resource`) are generated from the tool table: one
command per tool, its parameters as arguments and options, answered through
`handbook.tools.dispatch` like every other transport.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..bundle.signing import TRUSTED_KEYS_ENV
from ..errors import BundleError, KeyFormatError
from ..handlers.citing import AllowedSources
from ..tools.dispatch import call, from_text
from ..tools.model import Param, Tool
from ..tools.served import Served
from . import render

if TYPE_CHECKING:
    from ..libraries.library import Library

DEFAULT_BUNDLE = "build/bundle"
_NULL_CLAUSE = re.compile(r"[;,] null [^.;]*")


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
    (
        ["--allow-http"],
        {
            "is_flag": True,
            "help": "Fetch a bundle URL over plain http from a host that is not loopback.",
        },
    ),
    (
        ["--cite-kind", "cite_kinds"],
        {
            "multiple": True,
            "metavar": "KIND",
            "help": "ask and collect cite only docs of this kind (repeatable or comma-separated; "
            "the source allow-list). [default: any kind]",
        },
    ),
    (
        ["--cite-library", "cite_libraries"],
        {
            "multiple": True,
            "metavar": "LIBRARY",
            "help": "ask and collect cite only this library's docs (repeatable or "
            "comma-separated). [default: every library]",
        },
    ),
]
"""Where the knowledge comes from, whom to trust and what may be cited, for every command
that reads it."""


@dataclass(frozen=True)
class Sources:
    """The bundles a command reads and how it trusts them: its --bundle, --key,
    --allow-unsigned and --allow-http, as one value."""

    paths: tuple[str, ...]
    keys: tuple[str, ...] = ()
    allow_unsigned: bool = False
    allow_http: bool = False
    cite: AllowedSources | None = None
    """--cite-kind and --cite-library: what ask and collect may cite."""

    def served(self) -> Served:
        """The library at each path (a `Shelf` when there are several)."""
        return self.shelve(list(self.libraries().values()))

    def libraries(self) -> dict[str, Library]:
        """Each library by its path, or exit: 2 for a malformed key, 1 naming the cause
        for a refused bundle."""
        from ..libraries.library import Library

        libraries: dict[str, Library] = {}
        for path in self.paths or (DEFAULT_BUNDLE,):
            try:
                libraries[path] = Library.open(
                    path,
                    self.keys,
                    allow_unsigned=self.allow_unsigned,
                    allow_http=self.allow_http,
                    sources=self.cite,
                )
            except KeyFormatError as exc:
                raise click.UsageError(f"--key: {exc}") from None
            except BundleError as exc:
                click.echo(
                    f"refused: {path}: {exc}" if len(self.paths) > 1 else f"refused: {exc}",
                    err=True,
                )
                sys.exit(1)
        return libraries

    def shelve(self, libraries: list[Library]) -> Served:
        """One library as it is, several on a `Shelf` (or exit 2: two of one name)."""
        from ..libraries.shelf import Shelf

        if len(libraries) == 1:
            return libraries[0]
        try:
            return Shelf(libraries, self.cite)
        except ValueError as exc:
            raise click.UsageError(f"--bundle: {exc}") from None


def _options(specs: list[tuple[list[str], dict[str, Any]]]) -> Callable[[F], F]:
    def decorate(command: F) -> F:
        for decls, attrs in reversed(specs):
            command = click.option(*decls, **attrs)(command)
        return command

    return decorate


key_options = _options(KEY_OPTIONS)


def bundle_options(command: F) -> F:
    """The source options, handed to `command` as one `sources: Sources` argument."""

    @functools.wraps(command)
    def with_sources(
        *args: Any,
        bundle_paths: tuple[str, ...],
        keys: tuple[str, ...],
        allow_unsigned: bool,
        allow_http: bool,
        cite_kinds: tuple[str, ...],
        cite_libraries: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        cite = AllowedSources.of(cite_kinds or None, cite_libraries or None)
        sources = Sources(bundle_paths, keys, allow_unsigned, allow_http, cite)
        return command(*args, sources=sources, **kwargs)

    return _options(SOURCE_OPTIONS)(with_sources)  # type: ignore[return-value]


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
    value_type: Any = {"integer": click.INT, "boolean": click.BOOL}.get(str(kinds), click.STRING)
    return click.Option(
        [*flags, param.name],
        type=value_type,
        multiple=many,
        metavar=metavar,
        help=_for_people(param.description),
    )


def _for_people(description: str) -> str:
    """A parameter's description for --help: agents are told what null means, people
    leave an option out."""
    return _NULL_CLAUSE.sub("", description)


def tool_command(tool: Tool) -> click.Command:
    """The command for one tool."""
    params: list[click.Parameter] = [_click_param(p) for p in tool.params]
    if tool.filters:
        params.append(FILTER_OPTION)
    params += EXTRA_OPTIONS.get(tool.verb, [])

    @bundle_options
    def run(sources: Sources, as_json: bool, **given: Any) -> None:
        options = {
            name: given.pop(name)
            for name in [o.name for o in EXTRA_OPTIONS.get(tool.verb, [])]
            if name
        }
        arguments = _arguments(tool, given)
        answer = call(sources.served(), tool.name, arguments)
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
