"""The inbox options `handbook serve` and `handbook mcp` share: --inbox, --agent and
the caps, turned into one `Inbox` (or None) before the command runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..bundle.signing import PublicKey
from ..errors import KeyFormatError
from ..inbox.intake import Inbox
from ..inbox.store import Caps, StoreUnavailable
from ..inbox.stores import open_store

F = TypeVar("F", bound=Callable[..., Any])


def inbox_options(command: F) -> F:
    """--inbox, --agent and the caps, handed to `command` as one `inbox: Inbox | None`."""

    @click.option(
        "--inbox",
        "store",
        envvar="HANDBOOK_INBOX",
        metavar="STORE",
        help="Serve the write tools (propose, contradict, corroborate) into this inbox: a "
        "SQLite file, or a postgresql:// URL shared by several servers (or $HANDBOOK_INBOX).",
    )
    @click.option(
        "--agent",
        "agents",
        multiple=True,
        metavar="NAME=ed25519:KEY",
        help="An agent's public key: its signed records are attributed to NAME (repeatable).",
    )
    @click.option(
        "--inbox-rate",
        type=click.IntRange(1),
        default=Caps().per_principal_per_hour,
        show_default=True,
        help="Records each principal (or agent key) may write per hour.",
    )
    @click.option(
        "--inbox-open",
        type=click.IntRange(1),
        default=Caps().open_per_doc,
        show_default=True,
        help="Open records a doc may have before more are refused.",
    )
    @functools.wraps(command)
    def with_inbox(
        *args: Any,
        store: str | None,
        agents: tuple[str, ...],
        inbox_rate: int,
        inbox_open: int,
        **kwargs: Any,
    ) -> Any:
        if store is None and agents:
            raise click.UsageError("--agent needs --inbox")
        inbox = None if store is None else open_inbox(store, agents, Caps(inbox_rate, inbox_open))
        return command(*args, inbox=inbox, **kwargs)

    return with_inbox  # type: ignore[return-value]


def open_inbox(store: str, agents: tuple[str, ...], caps: Caps) -> Inbox:
    """The inbox in `store`, its agents' keys read first (a bad key is a usage error
    before anything is opened)."""
    keys = agent_keys(agents)
    try:
        return Inbox(open_store(store), caps, keys)
    except StoreUnavailable as exc:
        raise click.ClickException(str(exc)) from None


def agent_keys(agents: tuple[str, ...]) -> dict[str, PublicKey]:
    """The --agent options, NAME=ed25519:KEY each, by name."""
    keys = {}
    for item in agents:
        name, sep, text = item.partition("=")
        try:
            keys[name.strip()] = PublicKey.parse(text.strip())
        except KeyFormatError as exc:
            raise click.BadParameter(f"{item!r}: {exc}", param_hint="--agent") from None
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r} is not NAME=ed25519:KEY", param_hint="--agent")
    return keys
