"""A served library that agents can write back to, through a governed inbox.

`Writable(served, inbox)` serves everything `served` does (a `Library`, a `Shelf`, a
`RemoteLibrary`) and three more tools: `propose`, `contradict` and `corroborate`. What
they write goes to the inbox's `Store`, never into the bundle: nothing an agent writes
is served as reviewed knowledge until a person accepts it (`handbook inbox`) and it comes
back through the docs repository and the next build.

Read answers stay the library's own, with one addition: every doc they name carries, in
its pedigree, the open records about it (`open_records`), marked unreviewed and
attributed, on every replica that shares the store. Records are filed under the served
bundle's identity (`library@audience` for a library built with audiences, which a signing
agent puts in `library`): each audience has an inbox of its own, and a proposed new doc
may name only a library the caller is served (any other qualifier is refused like an
unknown id, so no caller writes into another audience's inbox). An open contradiction sets
`verify_first` (an unreviewed contradiction) but never `contested`, which is kept for
reviewed ones. When the store cannot be reached, writes answer `unavailable` and reads
go on without the overlay (`inbox: unavailable` in status).
"""

from __future__ import annotations

import builtins
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from ..answers import (
    AskAnswer,
    BriefAnswer,
    CollectAnswer,
    GetAnswer,
    ListAnswer,
    ResourceAnswer,
    SearchAnswer,
    StatusAnswer,
    WriteAnswer,
)
from ..bounds import clip, never_raise, refusal
from ..bundle.local import Bundle
from ..bundle.manifest import utc_time
from ..tools.model import ToolContext
from ..tools.served import Served
from . import records
from .intake import Inbox
from .store import Stored, StoreError, StoreUnavailable

A = TypeVar("A", bound=Mapping[str, object])
F = TypeVar("F", bound=Callable[..., Any])
W = TypeVar("W")
P = ParamSpec("P")
R = TypeVar("R")
MAX_SHOWN = 5
SHOWN_BASIS = 200


def _as_served(method: F) -> F:
    """A read tool passed on to `served`, shown (`inspect`, `help`) with the signature of
    the `Served` protocol, which is what it takes."""
    method.__signature__ = inspect.signature(getattr(Served, method.__name__))  # type: ignore[attr-defined]
    return method


def _judgement(
    judge: Callable[Concatenate[W, str, P], R], verb: str, kind: str, doc: str
) -> Callable[Concatenate[W, P], R]:
    """The write tool `verb`: `judge` filing a record of `kind`, with judge's signature
    less the kind (what `inspect` shows and `never_raise` checks calls against)."""

    def method(self: W, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return judge(self, kind, *args, **kwargs)

    signature = inspect.signature(judge)
    own, _, *rest = signature.parameters.values()
    method.__signature__ = signature.replace(parameters=[own, *rest])  # type: ignore[attr-defined]
    method.__name__ = verb
    method.__qualname__ = f"{judge.__qualname__.rpartition('.')[0]}.{verb}"
    method.__doc__ = doc
    return never_raise(method)


class Writable:
    """`served`, with an inbox agents can write to and whose open records reads show."""

    def __init__(self, served: Served, inbox: Inbox) -> None:
        self.served, self.inbox = served, inbox

    # -- what is served, as the library serves it, with open records in pedigrees ----------

    def tool_context(self) -> ToolContext:
        return self.served.tool_context()._replace(writable=True)

    def bundles(self) -> Mapping[str, Bundle]:
        return self.served.bundles()

    @property
    def exposed_tools(self) -> tuple[str, ...] | None:
        """The served object's choice of tools (`handbook.tools.exposed`), kept when
        wrapped: its tool context already carries it."""
        return getattr(self.served, "exposed_tools", None)

    def admits(self, principal: str | None) -> bool:
        """Whether the principal's audience is served (the gate refuses others with 403):
        the served `AudienceRouter`'s answer, and anyone's for what has no audiences."""
        admits = getattr(self.served, "admits", None)
        return bool(admits(principal)) if admits is not None else True

    def status(self) -> StatusAnswer:
        answer: StatusAnswer = self.served.status()
        try:
            self.inbox.store.records(limit=1)
            answer["inbox"] = "available"
        except StoreUnavailable as exc:
            answer["inbox"] = f"unavailable: {exc}"
        return answer

    @_as_served
    def list(self, *args: Any, **kwargs: Any) -> ListAnswer:
        return self._overlaid(self.served.list(*args, **kwargs), "docs", "id")

    @_as_served
    def get(self, *args: Any, **kwargs: Any) -> GetAnswer:
        answer = self.served.get(*args, **kwargs)
        if answer.get("found"):
            self._overlay([cast("dict[str, Any]", answer)], "id")
        return answer

    @_as_served
    def search(self, *args: Any, **kwargs: Any) -> SearchAnswer:
        return self._overlaid(self.served.search(*args, **kwargs), "hits", "id")

    @_as_served
    def collect(self, *args: Any, **kwargs: Any) -> CollectAnswer:
        return self._overlaid(self.served.collect(*args, **kwargs), "items", "id")

    @_as_served
    def ask(self, *args: Any, **kwargs: Any) -> AskAnswer:
        return self._overlaid(self.served.ask(*args, **kwargs), "sources", "document_id")

    @_as_served
    def brief(self, *args: Any, **kwargs: Any) -> BriefAnswer:
        answer = self._overlaid(self.served.brief(*args, **kwargs), "items", "id")
        for item in answer.get("items", []):
            why = (item.get("pedigree") or {}).get("verify_first")
            if why and "verify_first" not in item:
                item["verify_first"] = why
        return answer

    @_as_served
    def resource(self, *args: Any, **kwargs: Any) -> ResourceAnswer:
        return self.served.resource(*args, **kwargs)

    def _overlaid(self, answer: A, key: str, id_key: str) -> A:
        self._overlay(cast("builtins.list[dict[str, Any]]", answer.get(key) or []), id_key)
        return answer

    def _overlay(self, items: Sequence[dict[str, Any]], id_key: str) -> None:
        """Add the open records of each item's doc to its pedigree, in place."""
        default = self._default_library()
        by_library: dict[str, builtins.list[tuple[str, dict[str, Any]]]] = {}
        for item in items:
            library, doc = _target(item, id_key, default)
            if library:
                by_library.setdefault(library, []).append((doc, item))
        for library, found in by_library.items():
            namespace = self._namespace(library)
            open_records = self.inbox.open_records(namespace, [doc for doc, _ in found])
            for doc, item in found:
                if records_of := open_records.get(doc):
                    item["pedigree"] = self._with_open(item.get("pedigree") or {}, records_of)

    def _with_open(
        self, pedigree: dict[str, Any], open_records: builtins.list[Stored]
    ) -> dict[str, Any]:
        shown = [
            {
                "id": r.id,
                "kind": r.kind,
                "by": self.inbox.name_of(r.principal),
                "at": utc_time(r.created_at),
                "basis": clip(str(r.payload.get("basis", "")), SHOWN_BASIS),
                "reviewed": False,
                **({"section": r.payload["section"]} if r.payload.get("section") else {}),
            }
            for r in open_records[-MAX_SHOWN:]
        ]
        out = {**pedigree, "open_records": shown}
        against = [r for r in open_records if r.kind == "contradiction"]
        if against and "verify_first" not in out:
            last = against[-1]
            out["verify_first"] = (
                f"unreviewed contradiction by {self.inbox.name_of(last.principal)}: "
                f"{clip(str(last.payload.get('basis', '')), 120)}"
            )
        return out

    def _default_library(self) -> str:
        names = self._libraries()
        return names[0] if len(names) == 1 else ""

    def _libraries(self) -> builtins.list[str]:
        """The libraries served to this request, by name: its principal's audience's
        bundles (a `RemoteLibrary` has none here, and names what its server serves)."""
        return list(self.served.bundles()) or list(self.served.tool_context().libraries)

    def _namespace(self, library: str) -> str:
        """What records about `library` are filed under, for this request: the served
        bundle's identity, `library@audience` for a library built with audiences. So an
        agent reads, counts against caps and collides by id only with records made
        through its own audience's bundle, never learning of another audience's."""
        bundle = self.served.bundles().get(library)
        return bundle.manifest.signed.identity if bundle is not None else library

    # -- the write tools ---------------------------------------------------------------------

    @never_raise
    def propose(
        self,
        doc_id: str,
        markdown: str,
        basis: str,
        section: str | None = None,
        revision: str | None = None,
        evidence: Sequence[str] | None = None,
        key_id: str | None = None,
        signature: str | None = None,
        *,
        principal: str | None = None,
    ) -> WriteAnswer:
        """Propose a new doc, or a change to a doc (or to one section of it)."""
        return self._write(
            "proposal", doc_id, basis, section, revision, evidence, key_id, signature,
            principal, markdown=markdown,
        )  # fmt: skip

    def _judge(
        self,
        kind: str,
        doc_id: str,
        revision: str,
        basis: str,
        section: str | None = None,
        evidence: Sequence[str] | None = None,
        key_id: str | None = None,
        signature: str | None = None,
        *,
        principal: str | None = None,
    ) -> WriteAnswer:
        """`contradict` and `corroborate`: a record of `kind` about the revision read."""
        return self._write(
            kind, doc_id, basis, section, revision, evidence, key_id, signature, principal
        )

    contradict = _judgement(
        _judge, "contradict", "contradiction",
        "Say that a doc revision (or a section of it) is wrong, and why.",
    )  # fmt: skip
    corroborate = _judgement(
        _judge, "corroborate", "corroboration",
        "Say that a doc revision (or a section of it) held in the field, and how.",
    )  # fmt: skip

    def _write(
        self,
        kind: str,
        doc_id: str,
        basis: str,
        section: str | None,
        revision: str | None,
        evidence: Sequence[str] | None,
        key_id: str | None,
        signature: str | None,
        principal: str | None,
        markdown: str | None = None,
    ) -> WriteAnswer:
        try:
            library, doc, revision, anchor = self._target(kind, doc_id, revision, section)
            library = self._namespace(library)
            fields = records.payload(
                kind, library, doc, "",
                revision=revision, section=anchor, markdown=markdown, basis=basis,
                evidence=list(evidence or ()),
            )  # fmt: skip
            by = self.inbox.attribution(principal, key_id, signature, kind, fields)
            fields["by"] = by
            stored = Stored(
                records.record_id(kind, fields), kind, library, doc, by,
                {**fields, **({"signature": signature} if signature else {})},
                int(self.inbox.clock()),
            )  # fmt: skip
            kept, new = self.inbox.store.add(stored, self.inbox.caps)
        except records.RecordProblem as exc:
            return {"error": {**refusal("bad_arguments", str(exc)), "field": exc.field}}
        except StoreError as exc:
            return {"error": refusal(exc.code, str(exc))}
        self.inbox.forget(library, doc)
        return {
            "id": kept.id,
            "kind": kind,
            "doc": doc,
            "library": library,
            "state": kept.state,
            "new": new,
            "by": self.inbox.name_of(kept.principal),
        }

    def _target(
        self, kind: str, doc_id: str, revision: str | None, section: str | None
    ) -> tuple[str, str, str | None, str | None]:
        """(library, doc id, revision, section anchor) of what the record is about,
        checked against the served library; raises RecordProblem naming the field."""
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise records.RecordProblem("doc_id", "doc_id must be a doc id")
        found = self.served.get(doc_id)
        if not found.get("found"):
            if kind != "proposal" or revision is not None or section is not None:
                raise _unknown(doc_id)
            return self._new_doc(doc_id), doc_id.rpartition(":")[2], None, None
        current = found["revision"]
        if kind != "proposal" and revision is None:
            raise records.RecordProblem("revision", f"a {kind} names the revision it is about")
        if revision is not None and revision != current:
            raise records.RecordProblem(
                "revision",
                f"{found['id']} is now at revision {current[:12]}, not {clip(revision, 20)}: "
                "read it again (knowledge_get) and write about what it says now",
            )
        anchor = None
        if section is not None:
            anchor = next(
                (
                    s["anchor"]
                    for s in found.get("sections", [])
                    if section in (s["anchor"], s["title"])
                ),
                None,
            )
            if anchor is None:
                raise records.RecordProblem(
                    "section", f"{found['id']} has no section {clip(section, 80)}"
                )
        library = found.get("ref", "").rpartition(":")[0] or self._default_library()
        return library, found["id"], current, anchor

    def _new_doc(self, doc_id: str) -> str:
        """The served library a proposed new doc `[library:]id` is filed under. Only a
        library this request is served may be named: a qualifier naming any other (another
        audience's `library@audience`, a library not served here) is refused exactly like
        an unknown doc, before the store and its caps are consulted, so a caller can
        neither write into another audience's inbox nor learn what it holds."""
        library, _, new_id = doc_id.rpartition(":")
        served = self._libraries()
        if library and library not in served:
            raise _unknown(doc_id)
        if not _ID.fullmatch(new_id):
            raise records.RecordProblem(
                "doc_id", "a new doc's id is lowercase words and digits, dots between parts"
            )
        if not library and len(served) > 1:
            raise records.RecordProblem(
                "doc_id", f"a new doc names its library, one of {', '.join(served)}: library:id"
            )
        return library or self._default_library()


_ID = re.compile(r"[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*")
"""A doc id (the build's own grammar): what a proposed new doc may be called."""


def _unknown(doc_id: str) -> records.RecordProblem:
    """The one refusal of a doc this request is not served, whatever the reason."""
    return records.RecordProblem("doc_id", f"the library has no doc {clip(doc_id, 80)}")


def _target(item: Mapping[str, Any], id_key: str, default: str) -> tuple[str, str]:
    ref = item.get("ref")
    if isinstance(ref, str) and ":" in ref:
        library, _, doc = ref.partition(":")
        return library, doc
    return default, str(item.get(id_key, ""))
