"""The inbox agents write back to: its store, caps, declared agent keys and who a record
is by, and the open records of each doc, read through a short cache.

`handbook.inbox.writable` serves it beside a library's read tools; people decide its records
with `handbook inbox` (`handbook_build.commands.inbox`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..bounds import clip
from ..bundle.signing import PublicKey, b64decode_strict, signing_input
from . import records
from .store import Caps, Store, Stored, StoreUnavailable

OVERLAY_SECONDS = 1.0
"""How long open records of a doc are reused before the store is asked again: bounds
the read-path cost, and how stale another replica's view may be."""
DEFAULT_CAPS = Caps()


class Inbox:
    """The store, its caps, and the agents' keys the server declares (name → key)."""

    def __init__(
        self,
        store: Store,
        caps: Caps = DEFAULT_CAPS,
        agents: Mapping[str, PublicKey] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.caps, self.clock = store, caps, clock
        self.agents = {key.keyid: name for name, key in (agents or {}).items()}
        self._keys = {key.keyid: key for key in (agents or {}).values()}
        self._cache: dict[tuple[str, str], tuple[float, list[Stored]]] = {}
        self._lock = threading.Lock()
        self.last_error = ""

    def open_records(self, library: str, docs: Iterable[str]) -> dict[str, list[Stored]]:
        """The open records of `docs`, from a short cache; {} when the store is down."""
        now = time.monotonic()
        wanted = list(dict.fromkeys(docs))
        with self._lock:
            fresh = {
                d: hit[1]
                for d in wanted
                if (hit := self._cache.get((library, d))) and now - hit[0] < OVERLAY_SECONDS
            }
        missing = [d for d in wanted if d not in fresh]
        if missing:
            try:
                found = self.store.open_for(library, missing)
            except StoreUnavailable as exc:
                self.last_error = str(exc)
                return fresh
            self.last_error = ""
            with self._lock:
                for d in missing:
                    self._cache[(library, d)] = (now, found.get(d, []))
                    fresh[d] = found.get(d, [])
        return {d: fresh[d] for d in wanted if fresh.get(d)}

    def forget(self, library: str, doc: str) -> None:
        with self._lock:
            self._cache.pop((library, doc), None)

    def attribution(
        self,
        principal: str | None,
        key_id: str | None,
        signature: str | None,
        kind: str,
        fields: dict[str, Any],
    ) -> str:
        """Who the record is by; raises RecordProblem when it cannot be attributed."""
        if key_id is None and signature is None:
            if not principal:
                raise records.RecordProblem(
                    "signature",
                    "this request has no principal (no token) and the record is not signed: "
                    "call with a token, or sign the record with a declared agent key",
                )
            return f"principal:{principal}"
        if key_id is None or signature is None:
            raise records.RecordProblem("signature", "a signed record needs key_id and signature")
        key = self._keys.get(key_id)
        if key is None:
            raise records.RecordProblem(
                "key_id", f"key id {clip(key_id, 20)} is not an agent key this server declares"
            )
        try:
            raw = b64decode_strict(signature, "signature")
        except ValueError as exc:
            raise records.RecordProblem("signature", str(exc)) from None
        fields = {**fields, "by": f"key:{key_id}"}
        if len(raw) != 64 or not key.verifies(raw, signing_input(records.TAGS[kind], fields)):
            raise records.RecordProblem(
                "signature", f"the signature does not verify with agent key {key_id[:16]}"
            )
        return f"key:{key_id}"

    def name_of(self, by: str) -> str:
        """A record's author as people read it: the agent's declared name, or the principal."""
        kind, _, value = by.partition(":")
        return f"agent {self.agents.get(value, value[:16])}" if kind == "key" else value
