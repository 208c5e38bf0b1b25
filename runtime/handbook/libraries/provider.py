"""`HandbookProvider`: Handbook behind the knowledge-provider contract of an operations app.

Operations apps often talk to their knowledge source through a small async adapter —
``health()``, ``ask(question, actor)``, ``sync_manifest(documents)`` — so that the
source can be swapped or be down without the app going down with it. This module is that
adapter over anything `Served` (a `Library`, a `Shelf`, a `RemoteLibrary`, an audience
router), in Handbook's own names; docs/guide/provider.md maps them to such a contract's
fields. What it adds to the served tools:

- degraded mode that never raises: when the bundle cannot be loaded (a loader that
  raises, a served object whose status shows an integrity error or cannot be reached),
  `health` says ``unavailable``, `ask` answers ``evidence_state: unavailable`` and
  `sync_manifest` says it could not compare; each call tries again, so the provider
  recovers once the bundle is back;
- the asking `handbook.access.actor.Actor`, validated, set as the call's actor context (so `ask`
  echoes it and a `RemoteLibrary` forwards it), and logged with the question's size and
  the source ids only (never the question's text);
- `sync_manifest` compares the app's list of documents with what is served: present,
  missing, stale. It uploads nothing — the signed bundle is the only source of truth, and
  changing what is served is a build and a publish, never a call.

The library calls block (files, hashes, HTTP), so each runs in a worker thread
(`asyncio.to_thread`) and the event loop stays free.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, cast

from ..access.actor import Actor, ActorError, acting, actor_of, id_problem
from ..answers import ActorInfo, Source, StatusAnswer
from ..tools.served import Served

PROVIDER = "handbook"
MAX_DOCUMENTS = 1000
"""Document refs one `sync_manifest` call compares at most."""
log = logging.getLogger("handbook.provider")


class Health(TypedDict, total=False):
    state: str
    """available | unavailable"""
    provider: str
    library: str | None
    version: str | None
    signature: str
    docs: int
    statistics_state: str
    """verified | reported | not_reported, as `status` says (`handbook.handlers.statistics`)."""
    error: str


class DocumentRef(TypedDict, total=False):
    """A document the app expects: its id, and the version or revision it knows."""

    document_id: str
    version: str
    revision: str
    lang: str


class StaleDocument(TypedDict):
    document_id: str
    expected: dict[str, str]
    served: dict[str, str | None]


class SyncResult(TypedDict, total=False):
    state: str
    """compared | unavailable"""
    provider: str
    library: str | None
    version: str | None
    present: list[str]
    missing: list[str]
    stale: list[StaleDocument]
    invalid: list[dict[str, Any]]
    """Refs that are not documents refs (no id, a wrong type), with why."""
    uploaded: int
    """Always 0: the bundle is the source of truth; see the module's docstring."""
    error: str


class GroundedAnswer(TypedDict, total=False):
    answer: str
    evidence_state: str
    """grounded | insufficient | unavailable"""
    sources: list[Source]
    provider: str
    correlation_id: str
    library: str | None
    version: str | None
    actor: ActorInfo
    error: dict[str, str]


Loader = Callable[[], Served]
T = TypeVar("T")


class HandbookProvider:
    """The knowledge-provider adapter over a `Served`, or (`from_loader`) over a loader
    that makes one."""

    def __init__(
        self,
        served: Served | None,
        *,
        name: str = PROVIDER,
        sources_limit: int = 3,
        principal: str | None = None,
    ) -> None:
        """`principal` is whom an audience router answers as (its audience's bundle);
        None reads the public one."""
        self.name, self.sources_limit, self.principal = name, sources_limit, principal
        self._served = served
        self._loader: Loader | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_loader(
        cls,
        loader: Loader,
        *,
        name: str = PROVIDER,
        sources_limit: int = 3,
        principal: str | None = None,
    ) -> HandbookProvider:
        """A provider whose library `loader` makes (`lambda: Library.open(path, keys)`),
        called on first use and again on each use until it succeeds: a bundle that could
        not be loaded at start is served once it can be, and until then every call
        answers `unavailable` with the loader's error."""
        provider = cls(None, name=name, sources_limit=sources_limit, principal=principal)
        provider._loader = loader
        return provider

    # -- the contract ------------------------------------------------------------------------

    async def health(self) -> Health:
        """Whether questions can be answered now, and from which library and version."""
        return await asyncio.to_thread(self._in_context, None, self._health)

    async def ask(
        self, question: str, actor: Actor, correlation_id: str | None = None
    ) -> GroundedAnswer:
        """A grounded answer quoting the served docs, `insufficient` when they do not
        answer, `unavailable` when nothing can be asked; never generated text, never an
        exception. `actor` is checked as a transport checks it (`bad_actor` otherwise)."""
        correlation = uuid.uuid4().hex if correlation_id is None else correlation_id
        if (problem := id_problem(correlation, "correlation_id")) is not None:
            return self._unavailable(uuid.uuid4().hex, "bad_arguments", problem)  # never echoed
        if not isinstance(actor, Actor):
            return self._unavailable(correlation, ActorError.code, "actor must be an Actor")
        try:
            actor_of(actor._asdict(), "actor {name}")
        except ActorError as exc:
            return self._unavailable(correlation, exc.code, str(exc))
        answer = await asyncio.to_thread(
            self._in_context, actor, self._ask, question, actor, correlation
        )
        log.info(
            "ask",
            extra={
                "correlation_id": correlation,
                "actor": actor.info(),
                "question_chars": len(question) if isinstance(question, str) else None,
                "evidence_state": answer["evidence_state"],
                "source_ids": [s.get("document_id") for s in answer.get("sources", [])],
            },
        )
        return answer

    async def sync_manifest(self, documents: Sequence[Mapping[str, Any]]) -> SyncResult:
        """Compare the documents the app expects with what is served: `present`,
        `missing` (not served, or not in the language asked for) and `stale` (served at
        another version or revision). Uploads nothing (`uploaded: 0`)."""
        return await asyncio.to_thread(self._in_context, None, self._sync, documents)

    # -- in a worker thread ------------------------------------------------------------------

    def _in_context(self, actor: Actor | None, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)` as asked by this provider's principal for `actor`: what an
        audience router, `ask` and a `RemoteLibrary` read (`handbook.access.actor.acting`)."""
        with acting(actor, self.principal):
            return call(*args)

    def _load(self) -> tuple[Served | None, StatusAnswer | None, str | None]:
        """(served, its status, None) when it can answer; else (…, why not)."""
        served = self._served
        if served is None:
            with self._lock:
                if self._served is None and self._loader is not None:
                    try:
                        self._served = self._loader()
                    except Exception as exc:  # whatever the loader raised: unavailable, say why
                        return None, None, f"{type(exc).__name__}: {exc}"
                served = self._served
        if served is None:
            return None, None, "no library is served"
        try:
            status = served.status()
        except Exception as exc:  # a Served from elsewhere may raise; this adapter never does
            return served, None, f"{type(exc).__name__}: {exc}"
        problem = _problem(status)
        return served, status, problem

    def _health(self) -> Health:
        _, status, problem = self._load()
        library, version = _identity(status)
        out: Health = {"provider": self.name, "library": library, "version": version}
        if problem is not None:
            return {**out, "state": "unavailable", "error": problem}
        assert status is not None
        out = {**out, "state": "available"}
        if "signature" in status:
            out["signature"] = status["signature"]
        if "docs" in status:
            out["docs"] = status["docs"]
        out["statistics_state"] = status.get("statistics_state", "not_reported")
        return out

    def _ask(self, question: str, actor: Actor, correlation: str) -> GroundedAnswer:
        served, _, problem = self._load()
        if served is None or problem is not None:
            return self._unavailable(correlation, "unavailable", problem or "no library")
        try:
            answer = served.ask(question, self.sources_limit, correlation_id=correlation)
        except Exception as exc:  # never raise to the app
            return self._unavailable(correlation, "unavailable", f"{type(exc).__name__}: {exc}")
        if answer.get("evidence_state") not in ("grounded", "insufficient"):
            error: Mapping[str, Any] = answer.get("error") or {}  # a file refused, a server gone
            code, message = error.get("code", "unavailable"), error.get("message", "no answer")
            return self._unavailable(correlation, code, message)
        out = cast(GroundedAnswer, {**answer})
        out["provider"] = self.name
        out.setdefault("actor", actor.info())
        out["correlation_id"] = answer.get("correlation_id", correlation)
        out.setdefault("sources", [])
        return out

    def _unavailable(self, correlation: str, code: str, message: str) -> GroundedAnswer:
        return {
            "answer": "The knowledge provider is unavailable; no answer is given.",
            "evidence_state": "unavailable",
            "sources": [],
            "provider": self.name,
            "correlation_id": correlation,
            "library": None,
            "version": None,
            "error": {"code": code, "message": message},
        }

    def _sync(self, documents: Sequence[Mapping[str, Any]]) -> SyncResult:
        served, status, problem = self._load()
        library, version = _identity(status)
        base: SyncResult = {"provider": self.name, "library": library, "version": version}
        base["uploaded"] = 0
        if served is None or problem is not None:
            return {**base, "state": "unavailable", "error": problem or "no library"}
        if not isinstance(documents, Sequence) or len(documents) > MAX_DOCUMENTS:
            return {
                **base,
                "state": "unavailable",
                "error": f"documents must be a list of at most {MAX_DOCUMENTS} refs",
            }
        present: list[str] = []
        missing: list[str] = []
        stale: list[StaleDocument] = []
        invalid: list[dict[str, Any]] = []
        for n, ref in enumerate(documents):
            why = _invalid(ref)
            if why is not None:
                invalid.append({"index": n, "error": why})
                continue
            doc_id = ref["document_id"]
            try:
                got = served.get(doc_id, lang=ref.get("lang"))
            except Exception as exc:
                return {**base, "state": "unavailable", "error": f"{type(exc).__name__}: {exc}"}
            if not got.get("found") or got.get("fallback"):
                if _unreachable(got):
                    error = got.get("error", {})
                    return {**base, "state": "unavailable", "error": str(error.get("message"))}
                missing.append(doc_id)
                continue
            served_version = got.get("metadata", {}).get("version")
            served_now = {
                "version": None if served_version is None else str(served_version),
                "revision": got.get("revision"),
            }
            expected = {k: str(ref[k]) for k in ("version", "revision") if k in ref}
            if any(served_now[k] != v for k, v in expected.items()):
                stale.append({"document_id": doc_id, "expected": expected, "served": served_now})
            else:
                present.append(doc_id)
        return {
            **base,
            "state": "compared",
            "present": present,
            "missing": missing,
            "stale": stale,
            "invalid": invalid,
        }


def _problem(status: Mapping[str, Any]) -> str | None:
    """Why a served object cannot be asked, by its status: unreachable, or a file of its
    bundle that failed verification (in it, or in any library of a shelf)."""
    error = status.get("error")
    if isinstance(error, dict):
        return f"{error.get('code', 'error')}: {error.get('message', '')}".strip()
    for answer in [status, *status.get("libraries", [])]:
        if answer.get("integrity_error"):
            return f"integrity_error: {answer['integrity_error']}"
    return None


def _identity(status: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The library and version a status names (None for a shelf, or no status)."""
    if status is None:
        return None, None
    return status.get("library"), status.get("version")


def _invalid(ref: Any) -> str | None:
    if not isinstance(ref, Mapping):
        return "expected an object with document_id"
    doc_id = ref.get("document_id")
    if not isinstance(doc_id, str) or not 0 < len(doc_id) <= 512:
        return "document_id must be a non-empty string of at most 512 characters"
    for key in ("version", "revision", "lang"):
        if key in ref and not isinstance(ref[key], str):
            return f"{key} must be a string"
    return None


def _unreachable(answer: Mapping[str, Any]) -> bool:
    """An answer that says the served object could not be asked (a RemoteLibrary whose
    server is down), not that the doc is missing."""
    error = answer.get("error")
    return isinstance(error, dict) and error.get("code") == "unavailable"
