"""`handbook serve`, and `handbook token` for the principals it lets in."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import click

from ..access.principals import PUBLIC, TOKENS_FILE_ENV, Principals, add_token
from ..errors import HandbookError
from ..inbox.intake import Inbox
from ..inbox.writable import Writable
from ..libraries.audiences import AudienceRouter
from ..libraries.library import Library
from ..serve.connections import Limits
from ..serve.gate import DEFAULT_BURST, DEFAULT_RATE
from ..serve.request_log import KEY_ENV, RequestLog
from ..tools.served import Served
from .inbox_options import inbox_options
from .queries import Sources, bundle_options
from .tool_options import exposing, tools_option

LOOPBACK = ("127.0.0.1", "::1", "localhost")
DEFAULT_SITE = "build/site"
"""Where `handbook init`'s site is built, and the site served when no configuration says."""


@click.command()
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
    default=None,
    help="The built site to serve beside the API (skipped when missing) [default: the "
    "`site_dir` of the site configuration in the current folder, else build/site].",
)
@click.option(
    "--token",
    envvar="HANDBOOK_TOKEN",
    help="One bearer token required on the API, MCP and bundles (or $HANDBOOK_TOKEN).",
)
@click.option(
    "--tokens",
    "tokens_file",
    envvar=TOKENS_FILE_ENV,
    type=click.Path(dir_okay=False),
    help=f"A tokens file: one principal per line with its token's digest (or ${TOKENS_FILE_ENV}); "
    "see `handbook token add`.",
)
@click.option("--protect-site", is_flag=True, help="Require a token for the site too.")
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
    help="Another host name clients use to reach the server; requests naming any other "
    "host than these and loopback are refused.",
)
@click.option(
    "--rate-limit",
    "rate",
    type=click.FloatRange(0),
    default=DEFAULT_RATE,
    show_default=True,
    help="Requests a second each client may make on average (0: no limit).",
)
@click.option(
    "--burst",
    type=click.IntRange(1),
    default=DEFAULT_BURST,
    show_default=True,
    help="Requests a client may make at once before the rate applies.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=Limits().max_connections,
    show_default=True,
    help="Open connections at most; the oldest idle one is closed to make room.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(0.1),
    default=Limits().header_seconds,
    show_default=True,
    help="Seconds a client has to send a request's headers.",
)
@click.option(
    "--log",
    "log_target",
    default="-",
    show_default=True,
    metavar="FILE",
    help="Where the request log goes: one JSON line per tool call, over the API and MCP. "
    "`-` for stderr, a file to append to, or `off`.",
)
@click.option(
    "--log-queries",
    is_flag=True,
    help="Log the text of queries and questions; by default only their length and a "
    f"keyed hash (HMAC-SHA256; the key is random per process, or ${KEY_ENV}).",
)
@click.option(
    "--publish-report",
    "publish_report",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The release pipeline's report of its last publish (`handbook publish-report`), "
    "read at each status call and shown as reported, never as verified.",
)
@tools_option
@inbox_options
@bundle_options
def serve(
    host: str,
    port: int,
    site_dir: str | None,
    token: str | None,
    tokens_file: str | None,
    protect_site: bool,
    reload_interval: float,
    allowed_hosts: tuple[str, ...],
    rate: float,
    burst: int,
    max_connections: int,
    header_timeout: float,
    log_target: str,
    log_queries: bool,
    publish_report: str | None,
    tool_names: str | None,
    sources: Sources,
    inbox: Inbox | None,
) -> None:
    """Serve the site, the bundle files, the JSON API and MCP over HTTP in one process.

    Several --bundle options serve several libraries at once (refs are qualified as
    library:id; each bundle is under /bundle/<library>/; the site is the first one's).
    Bundles built for audiences are grouped by audience: each principal (--tokens,
    audience=) reads its own audience's only.
    A newly published bundle is verified and swapped in without dropping requests; one
    that fails verification is refused and the old one keeps serving. Only requests
    naming this server's host are answered, each client's rate is capped, and with
    --token or --tokens the API, MCP and bundles need a known bearer token. Every tool
    call is logged (--log), without the text of queries unless --log-queries. Ctrl-C stops."""
    from ..serve.server import serve as run

    principals = _principals(token, tokens_file)
    watched = _reporting(sources.libraries(), publish_report)
    served = _offered(by_audience(watched, principals, sources), inbox, principals, tool_names)
    site = _site(site_dir)
    _check_exposure(host, protect_site, principals)
    log = _request_log(log_target, log_queries)
    try:
        run(
            served,
            watched,
            host=host,
            port=port,
            site=site,
            principals=principals,
            protect_site=protect_site,
            reload_interval=reload_interval,
            allowed_hosts=allowed_hosts,
            rate=rate,
            burst=burst,
            limits=Limits(max_connections, header_timeout),
            announce=lambda line: click.echo(line, err=True),
            log=log,
        )
    finally:
        if log is not None:
            log.close()


def _reporting(libraries: dict[str, Library], report: str | None) -> dict[str, Library]:
    """The libraries, each reading the publish report (shown only where it names it)."""
    for library in libraries.values():
        library.publish_report = report
    return libraries


def _site(site_dir: str | None) -> Path | None:
    """The built site, or None (noted) when there is none to serve. Without `--site`,
    where the site configuration of the current folder builds it."""
    where = Path(site_dir) if site_dir is not None else configured_site(Path("."))
    if where.is_dir():
        return where
    click.echo(f"note: no site at {where}; serving the API and the bundle only", err=True)
    return None


def configured_site(folder: Path) -> Path:
    """The `site_dir` of the site configuration in `folder` (mkdocs.yml, zensical.toml,
    handbook.yml), read by the build side when it is installed; else `build/site`, where
    `handbook init` puts it. The runtime reads no YAML itself: it is imported by name,
    as the build commands are."""
    try:
        site_config = importlib.import_module("handbook_build.config.site_config")
    except ImportError:
        return Path(DEFAULT_SITE)
    found: Path | None = site_config.site_dir(folder)
    if found is None:
        return Path(DEFAULT_SITE)
    return Path(os.path.relpath(found)) if not found.is_absolute() else found


def _offered(
    served: Served, inbox: Inbox | None, principals: Principals | None, tool_names: str | None
) -> Served:
    """`served` with the write tools into `inbox`, whose records must be attributable (to
    the principal of a request, or to a signing agent); only `tool_names` when given."""
    return exposing(_writable(served, inbox, principals), tool_names)


def _writable(served: Served, inbox: Inbox | None, principals: Principals | None) -> Served:
    if inbox is None:
        return served
    if principals is None and not inbox.agents:
        raise click.UsageError(
            "--inbox needs --token or --tokens (writes are attributed to the principal "
            "of the request) or --agent keys (signed writes)"
        )
    return Writable(served, inbox)


def _check_exposure(host: str, protect_site: bool, principals: Principals | None) -> None:
    """Refuse a protected site without tokens; warn of a tokenless server beyond loopback."""
    if protect_site and principals is None:
        raise click.UsageError("--protect-site needs --token or --tokens")
    if host not in LOOPBACK and principals is None:
        click.echo(
            f"warning: listening on {host} without tokens: anyone who can reach it can "
            "read the library",
            err=True,
        )


def _request_log(target: str, queries: bool) -> RequestLog | None:
    if target == "off":
        if queries:
            raise click.UsageError("--log-queries needs a log; --log is off")
        return None
    try:
        return RequestLog.open(target, queries=queries, key=os.environ.get(KEY_ENV) or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"--log {target}: cannot open it ({exc.strerror})") from None


def by_audience(
    libraries: Mapping[str, Library],
    principals: Principals | None,
    sources: Sources | None = None,
) -> Served:
    """What `handbook serve` serves: the libraries as one when none was built for
    audiences; otherwise an `AudienceRouter` serving each principal its audience's bundles
    only. The bundles are grouped by audience before any shelf is made: a library with
    audiences is built into one bundle per audience, all of one name, and only the
    bundles of one audience are ever read together (`sources.shelve`, --cite-* kept)."""
    shelve = (sources or Sources(())).shelve
    groups = _audiences(libraries)
    if not any(lib.bundle.manifest.signed.audience for lib in libraries.values()):
        return shelve(list(libraries.values()))
    if set(groups) - {PUBLIC} and principals is None:
        raise click.UsageError(
            f"the bundles are for audiences {', '.join(sorted(groups))}: serving any but "
            "public needs --tokens (each principal's audience= says which it reads)"
        )
    router = AudienceRouter({a: shelve(libs) for a, libs in groups.items()}, principals)
    return cast(Served, router)


def one_audience(sources: Sources) -> Served:
    """What `handbook mcp` serves over stdio. Its one client comes with no token, so
    nothing says whose audience to read: the bundles of one audience are served as they
    are, and bundles of several are refused rather than one picked for the client (the
    operator points it at the audience it means, or serves several with `handbook serve
    --tokens`)."""
    libraries = sources.libraries()
    groups = _audiences(libraries)
    if len(groups) > 1:
        raise click.UsageError(
            f"the bundles are for audiences {', '.join(sorted(groups))}, and over stdio "
            "there is no token to choose one by: give the bundles of one audience (or "
            "serve them all with `handbook serve --tokens`, each principal reading its own)"
        )
    return sources.shelve(list(libraries.values()))


def _audiences(libraries: Mapping[str, Library]) -> dict[str, list[Library]]:
    """The libraries by the audience their bundle was built for (none: public)."""
    groups: dict[str, list[Library]] = {}
    for library in libraries.values():
        audience = library.bundle.manifest.signed.audience
        groups.setdefault(audience or PUBLIC, []).append(library)
    return groups


def _principals(token: str | None, tokens_file: str | None) -> Principals | None:
    if token and tokens_file:
        raise click.UsageError("give --token or --tokens, not both")
    if token:
        return Principals.single(token)
    if tokens_file:
        try:
            loaded = Principals.load(tokens_file)
        except HandbookError as exc:
            raise click.UsageError(str(exc)) from None
        if not loaded:
            raise click.UsageError(
                f"{tokens_file}: no principal; add one with `handbook token add NAME`"
            )
        return loaded
    return None


@click.group()
def token() -> None:
    """Manage the principals `handbook serve --tokens FILE` lets in."""


@token.command(name="add")
@click.argument("name")
@click.option(
    "--tokens",
    "tokens_file",
    envvar=TOKENS_FILE_ENV,
    required=True,
    type=click.Path(dir_okay=False),
    help=f"The tokens file (or ${TOKENS_FILE_ENV}).",
)
@click.option(
    "--audience",
    metavar="AUDIENCE",
    help="The audience whose bundle NAME reads (a library built for audiences) [default: public].",
)
def add(name: str, tokens_file: str, audience: str | None) -> None:
    """Make a new random token for principal NAME, store its digest in the tokens file,
    and print the token — the only time it is shown."""
    try:
        made = add_token(tokens_file, name, audience)
    except (HandbookError, OSError) as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(made)
    click.echo(
        f"added {name} to {os.fspath(tokens_file)}; give the token above to {name} now: "
        "it is stored nowhere",
        err=True,
    )
