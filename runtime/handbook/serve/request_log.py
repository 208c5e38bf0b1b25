"""The request log of `handbook serve`: one JSON line per tool call, over HTTP and MCP.

Each line says who asked what and what they got, without what they wrote::

    {"time": "2026-03-01T09:30:12.345Z", "transport": "http", "tool": "knowledge_search",
     "principal": "support-bot", "actor": null, "arguments": {"query": 21, "limit": 1},
     "words": {"query": {"chars": 19, "hmac": "3f1c…"}}, "outcome": "ok",
     "docs": ["device.acme.ac200"], "sections": ["device.acme.ac200#register-map"],
     "answer_bytes": 1834, "ms": 4.2}

- `arguments`: each argument's name and size (bytes of its JSON), never its value.
- `words`: the arguments people write in words (`WORDS`: queries, questions, tasks,
  proposed text) as their length in characters and a keyed hash, HMAC-SHA256 over the
  UTF-8 text: equal questions have equal hashes, so repeats can be counted, but the text
  cannot be read back, nor guessed by hashing candidates without the key. The key is
  random for each process unless `HANDBOOK_LOG_KEY` gives one (to correlate across
  restarts and servers). With `queries=True` (`--log-queries`) the text itself is logged
  instead of the hash.
- `docs` and `sections`: the doc ids (refs on a shelf) and `id#anchor` sections the
  answer returned; `outcome` is `ok`, `not_found` or the error's code.
- `actor` is the person or system an agent acts for, with tenant and workspace, when the
  transport carried an actor context (`handbook.access.actor`); null otherwise. `ask` answers
  add their `correlation_id`.

Every control, format (bidi: U+202E and its kind), line-separator or lone-surrogate
character is written as its ``\\u`` escape: a line read in a terminal shows what was
sent, and cannot reorder, hide or forge what is around it.

Logging never changes an answer: the line is written after the call, and a log that
cannot be written is reported once on stderr and otherwise left alone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from ..access.actor import CURRENT_ACTOR
from ..answers import ActorInfo
from ..tools.dispatch import Dispatch, call
from ..tools.served import Served
from ..tools.table import BY_NAME

KEY_ENV = "HANDBOOK_LOG_KEY"
MIN_KEY_CHARS = 16
WORDS = frozenset({"query", "question", "task", "topics", "markdown", "basis", "evidence"})
"""The arguments people write in words: logged as a keyed hash unless queries are on."""
_LISTS = ("docs", "hits", "items", "sources")
"""Where answers list what they return: each entry a doc, or a section of one."""


class RequestLog:
    """Writes one JSON line per tool call to `stream` (thread-safe: MCP calls run in
    worker threads)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        queries: bool = False,
        key: bytes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.stream, self.queries, self.clock = stream, queries, clock
        self._key = key or secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._broken = False

    @classmethod
    def open(cls, target: str, *, queries: bool = False, key: str | None = None) -> RequestLog:
        """A log to stderr (`-`) or appended to the file `target` (made readable by its
        owner only). `key` is the hash key's text (`HANDBOOK_LOG_KEY`); None for a
        random one."""
        if key is not None and len(key) < MIN_KEY_CHARS:
            raise ValueError(
                f"${KEY_ENV} has {len(key)} characters; give at least {MIN_KEY_CHARS} "
                "(a random string, such as the output of `openssl rand -hex 32`)"
            )
        secret = key.encode() if key is not None else None
        if target == "-":
            return cls(sys.stderr, queries=queries, key=secret)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return cls(os.fdopen(fd, "a", encoding="utf-8"), queries=queries, key=secret)

    def close(self) -> None:
        if self.stream is not sys.stderr:
            self.stream.close()

    def caller(self, transport: str) -> Dispatch:
        """`dispatch.call`, logged as calls over `transport` (http, mcp)."""

        def logged(
            served: Served,
            name: str,
            arguments: Mapping[str, Any] | None = None,
            principal: str | None = None,
        ) -> dict[str, Any]:
            started = time.perf_counter()
            answer = call(served, name, arguments, principal)
            elapsed = time.perf_counter() - started
            actor = CURRENT_ACTOR.get()
            info = actor.info() if actor is not None else None
            self.write(self.line(transport, name, arguments, principal, answer, elapsed, info))
            return answer

        return logged

    def line(
        self,
        transport: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        principal: str | None,
        answer: Mapping[str, Any],
        seconds: float,
        actor: ActorInfo | None = None,
    ) -> dict[str, Any]:
        """The log line of one call (a dict, before it is written)."""
        given = arguments if isinstance(arguments, Mapping) else {}
        docs, sections = returned(answer)
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(self.clock(), UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "transport": transport,
            "tool": name if name in BY_NAME else None,
            "principal": principal,
            "actor": dict(actor) if actor else None,
            "arguments": {_key(k): _size(v) for k, v in given.items()},
            "words": {k: self._words(v) for k, v in given.items() if k in WORDS and v is not None},
            "outcome": outcome(answer),
            "docs": docs,
            "sections": sections,
            "answer_bytes": _size(answer),
            "ms": round(seconds * 1000, 1),
        }
        if isinstance(answer.get("correlation_id"), str):
            line["correlation_id"] = answer["correlation_id"]
        return line

    def write(self, line: Mapping[str, Any]) -> None:
        text = escaped(json.dumps(line, ensure_ascii=False, separators=(",", ":"))) + "\n"
        with self._lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError) as exc:  # a full disk, a closed stream
                if not self._broken:
                    self._broken = True
                    print(f"handbook: the request log cannot be written: {exc}", file=sys.stderr)

    def _words(self, value: Any) -> dict[str, Any]:
        text = "\n".join(map(str, value)) if isinstance(value, list) else str(value)
        if self.queries:
            return {"chars": len(text), "text": value}
        data = text.encode("utf-8", "surrogatepass")  # JSON may carry a lone surrogate
        digest = hmac.new(self._key, data, hashlib.sha256).hexdigest()
        return {"chars": len(text), "hmac": digest}


def returned(answer: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(doc refs, `ref#anchor` sections) an answer returned, each once, in order: the
    doc or section `get` and `resource` read, a write's doc, and the entries of `list`,
    `search`, `collect`, `ask` and `brief` (a section where the entry names its anchor;
    a collected doc that came in sections is listed as the doc)."""
    docs: dict[str, None] = {}
    sections: dict[str, None] = {}

    def add(entry: Mapping[str, Any], anchors: Iterable[Any]) -> None:
        ref = entry.get("ref") or entry.get("id") or entry.get("document_id")
        if not isinstance(ref, str):
            return
        docs[ref] = None
        for anchor in anchors:
            if isinstance(anchor, str) and anchor:
                sections[f"{ref}#{anchor}"] = None

    if answer.get("found") is True:  # get, resource
        section = answer.get("section")
        add(answer, [section.get("anchor")] if isinstance(section, dict) else [])
    elif isinstance(answer.get("doc"), str) and "state" in answer:  # a write tool's record
        add({"ref": answer["doc"]}, [])
    for name in _LISTS:
        for entry in answer.get(name) or ():
            if isinstance(entry, dict):
                add(entry, [entry.get("anchor")])
    return list(docs), list(sections)


def outcome(answer: Mapping[str, Any]) -> str:
    error = answer.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return str(error["code"])
    return "not_found" if answer.get("found") is False else "ok"


_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls, format characters (the bidi controls among them), lone surrogates, line and
paragraph separators: what a terminal or an editor acts on instead of showing."""


def escaped(text: str) -> str:
    """A JSON `text` with each `_UNSAFE` character as its ``\\u`` escape (two, past the
    BMP). Still the same JSON: such characters can only stand inside its strings, where
    the escape means the character."""
    return _NOT_PRINTABLE_ASCII.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) in _UNSAFE:
        return json.dumps(char)[1:-1]  # ASCII-only: \u escapes
    return char


def _size(value: Any) -> int:
    """Bytes of `value`'s JSON in UTF-8 (a lone surrogate, which JSON may carry, as 3)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def _key(name: Any) -> str:
    """An argument's name as logged: a name like a parameter's, or `?` (a caller may
    send anything as a name, and what they send is not to be logged)."""
    text = str(name)
    return text if len(text) <= 64 and text.isidentifier() and text.isascii() else "?"
