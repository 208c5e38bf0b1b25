"""Who an agent acts for: an actor context that rides with a request, never in its arguments.

An operations app calls Handbook for a person or a system (the actor), inside a tenant
and a workspace. That context is transport metadata, so a doc can never turn it into a
tool parameter and an agent cannot be prompted into changing it:

- HTTP (and MCP over HTTP): the headers ``X-Handbook-Actor``, ``X-Handbook-Tenant`` and
  ``X-Handbook-Workspace``;
- MCP: the request's ``_meta`` keys ``handbook/actor``, ``handbook/tenant`` and
  ``handbook/workspace`` (over HTTP they win over the headers);
- RPC: the framework's call details, passed to a handler as ``details`` (a mapping or an
  object with those three names, or with them in ``caller_authextra``, as WAMP gives).

Each value is validated (`MAX_CHARS`, `ALLOWED`); a bad one, or a header sent twice
(which one was meant?), refuses the request with ``bad_actor`` instead of being logged
or echoed. `ask`'s correlation id keeps to the same grammar (`id_problem`). The transport sets `CURRENT_ACTOR` for
the call; `ask` echoes it beside its correlation id, the request log records it, and a
`RemoteLibrary` forwards it to the server it asks.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..answers import ActorInfo

MAX_CHARS = 128
ID_CHARS = "[A-Za-z0-9][A-Za-z0-9._:@/+=-]*"
ALLOWED = re.compile(ID_CHARS + r"\Z")
"""An id, an e-mail-like name, a path-like scope: no spaces, quotes or control characters,
so a value can be logged and echoed as it is."""
ID_SCHEMA: Mapping[str, Any] = {
    "type": "string",
    "maxLength": MAX_CHARS,
    "pattern": f"^{ID_CHARS}$",
}
"""The same grammar as JSON Schema, for a tool parameter that keeps to it."""
FIELDS = ("actor", "tenant", "workspace")
HEADERS = {name: f"x-handbook-{name}" for name in FIELDS}
META_KEYS = {name: f"handbook/{name}" for name in FIELDS}


class Actor(NamedTuple):
    actor: str | None = None
    tenant: str | None = None
    workspace: str | None = None

    def info(self) -> ActorInfo:
        return {name: value for name, value in zip(FIELDS, self, strict=True) if value}  # type: ignore[return-value]


class ActorError(ValueError):
    """An actor context that is not valid; the message says which part and why."""

    code = "bad_actor"


CURRENT_ACTOR: contextvars.ContextVar[Actor | None] = contextvars.ContextVar(
    "handbook_actor", default=None
)
"""Whom the request being answered acts for, as its transport carried it."""
CURRENT_PRINCIPAL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "handbook_principal", default=None
)
"""Who is asking, as the transport authenticated them (the audience router reads it)."""


def actor_of(values: Mapping[str, Any], where: str) -> Actor | None:
    """The actor context in `values` (keyed by `FIELDS`), None when none is sent. `where`
    names the carrier in errors (``header X-Handbook-Tenant``, ``_meta handbook/tenant``)."""
    found: dict[str, str] = {}
    for name in FIELDS:
        value = values.get(name)
        if value is None:
            continue
        problem = id_problem(value, where.format(name=name))
        if problem:
            raise ActorError(problem)
        found[name] = value
    return Actor(**found) if found else None


def id_problem(value: Any, label: str) -> str | None:
    """Why `value` may not be logged and echoed as it is (a string of at most `MAX_CHARS`
    characters of `ALLOWED`), naming it `label`; None when it may. The one grammar of
    caller-chosen ids: the actor context here, `ask`'s correlation id."""
    if not isinstance(value, str):
        return f"{label} must be a string, not {type(value).__name__}"
    if len(value) > MAX_CHARS:
        return f"{label} is {len(value)} characters; at most {MAX_CHARS}"
    if not ALLOWED.match(value):
        return (
            f"{label} may hold letters, digits and . _ : @ / + = - only, "
            "starting with a letter or digit"
        )
    return None


def from_headers(
    headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]],
) -> Actor | None:
    """The actor context of an HTTP request's headers: a mapping, or the ASGI list of
    (name, value) pairs, where a header sent twice is refused (the first and the last
    may each be what some proxy or app reads)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    wanted = {header.encode(): name for name, header in HEADERS.items()}
    values: dict[str, str] = {}
    for key, value in pairs:
        name = wanted.get(key.lower())
        if name is None:
            continue
        if name in values:
            raise ActorError(f"header X-Handbook-{name} is sent more than once; send it once")
        values[name] = value.decode("latin-1")
    return actor_of(values, "header X-Handbook-{name}") if values else None


def from_meta(meta: Mapping[str, Any] | None) -> Actor | None:
    """The actor context of an MCP request's ``_meta``."""
    if not meta:
        return None
    values = {name: meta[key] for name, key in META_KEYS.items() if key in meta}
    return actor_of(values, "_meta handbook/{name}") if values else None


def from_details(details: Any) -> Actor | None:
    """The actor context of an RPC framework's call details: a mapping, or an object
    with attributes, holding `FIELDS` directly or in ``caller_authextra``."""
    if details is None:
        return None

    def get(holder: Any, name: str) -> Any:
        return holder.get(name) if isinstance(holder, Mapping) else getattr(holder, name, None)

    extra = get(details, "caller_authextra")
    holder = (
        extra
        if isinstance(extra, Mapping) and not any(get(details, n) for n in FIELDS)
        else details
    )
    values = {name: get(holder, name) for name in FIELDS}
    return actor_of({k: v for k, v in values.items() if v is not None}, "details {name}")


def headers_of(actor: Actor | None) -> dict[str, str]:
    """The HTTP headers that carry `actor` (for a client forwarding it)."""
    if actor is None:
        return {}
    sent = zip(FIELDS, actor, strict=True)
    return {HEADERS[name].title(): value for name, value in sent if value}


_KEEP: Any = object()


@contextlib.contextmanager
def acting(actor: Actor | None, principal: str | None = _KEEP) -> Iterator[None]:
    """Answer the calls in this block for `actor`, asked by `principal` (unchanged when
    not given): what the audience router, the handlers and the request log read, in this
    context only. Transports set both per request; in the Python API,
    ``with acting(Actor("u-17", "acme", "ops")):``."""
    asked_by = CURRENT_PRINCIPAL.get() if principal is _KEEP else principal
    principal_token = CURRENT_PRINCIPAL.set(asked_by)
    actor_token = CURRENT_ACTOR.set(actor)
    try:
        yield
    finally:
        CURRENT_ACTOR.reset(actor_token)
        CURRENT_PRINCIPAL.reset(principal_token)
