"""`RemoteLibrary`: the same tools as `Library`, answered by a `handbook serve` elsewhere.

For an application whose knowledge lives in another process or on another machine.
Every tool is one POST of its arguments to ``/api/v1/<verb>`` and returns the server's
dict, so a `RemoteLibrary` can itself be served by any transport. When the server
cannot be reached, is too slow or answers with something that is not the API's JSON,
nothing raises: `ask` answers ``evidence_state: unavailable`` and the other tools an
``{"error": {"code": "unavailable", …}}`` dict, so the application's other functions
keep working (degraded mode) and recover by themselves when the server is back. The
actor context of the call (`handbook.access.actor`) goes with it, as the server's headers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..access.actor import CURRENT_ACTOR, headers_of
from ..answers import (
    AskAnswer,
    BriefAnswer,
    CollectAnswer,
    GetAnswer,
    ListAnswer,
    ResourceAnswer,
    SearchAnswer,
    StatusAnswer,
)
from ..bundle.canonical import load_untrusted
from ..bundle.local import Bundle
from ..tools.model import ToolContext
from ..tools.table import BY_NAME, BY_VERB

if TYPE_CHECKING:
    import urllib.request

DEFAULT_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024
ANSWER_DEPTH = 64
"""How deep a server's answer may nest: doc metadata nests up to 32 levels inside it; a
deeper answer is refused before it is parsed (json would recurse on it)."""


class RemoteLibrary:
    """A client of `handbook serve`'s JSON API at `url` (the server's root)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        allow_http: bool = False,
    ) -> None:
        """`url` is https, or plain http on loopback (elsewhere only with `allow_http`:
        the token and every question would cross the network in the clear)."""
        from ..bundle.web import url_problem  # urllib and http.client: not at `import handbook`

        problem = url_problem(url, allow_http)
        if problem is not None:
            raise ValueError(f"{url!r}: {problem}")
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout
        self._allow_http = allow_http
        self._context: ToolContext | None = None

    def tool_context(self) -> ToolContext:
        """What the server's tools say about its libraries (asked once; a placeholder
        while the server cannot be reached)."""
        if self._context is None:
            index = self._request("GET", "/api/v1/", None)
            context = index.get("context")
            if not isinstance(context, dict):
                return ToolContext(self.url, (), 0, (), {}, ())
            try:
                filters = {
                    k: tuple(v) if v is not None else None for k, v in context["filters"].items()
                }
                self._context = ToolContext(
                    str(context["title"]),
                    tuple(context["libraries"]),
                    int(context["docs"]),
                    tuple(context["kinds"]),
                    filters,
                    tuple(context["languages"]),
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                return ToolContext(self.url, (), 0, (), {}, ())
        return self._context

    def bundles(self) -> dict[str, Bundle]:
        return {}  # the server publishes its own bundles

    def status(self) -> StatusAnswer:
        return cast(StatusAnswer, self._request("GET", "/api/v1/status", None))

    def list(
        self,
        query: str | None = None,
        limit: int = 20,
        *,
        offset: int = 0,
        lang: str | None = None,
        reviewed: bool | None = None,
        suspect: bool | None = None,
        include_retired: bool | None = None,
        **filters: Any,
    ) -> ListAnswer:
        return cast(ListAnswer, self._tool("list", locals()))

    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> GetAnswer:
        return cast(GetAnswer, self._tool("get", locals()))

    def search(
        self,
        query: str,
        limit: int = 10,
        lang: str | None = None,
        offset: int = 0,
        retriever: str | None = None,
    ) -> SearchAnswer:
        return cast(SearchAnswer, self._tool("search", locals()))

    def collect(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        revisions: Mapping[str, str] | None = None,
        limit: int = 10,
        max_bytes: int = 32_000,
        *,
        lang: str | None = None,
        retriever: str | None = None,
        **filters: Any,
    ) -> CollectAnswer:
        answer = cast(CollectAnswer, self._tool("collect", locals()))
        if "items" not in answer:
            answer.setdefault("items", [])
            answer.setdefault("omissions", [])
            answer.setdefault("no_match", True)
        return answer

    def ask(
        self,
        question: str,
        limit: int = 3,
        correlation_id: str | None = None,
        retriever: str | None = None,
    ) -> AskAnswer:
        answer = cast(AskAnswer, self._tool("ask", locals()))
        if "evidence_state" not in answer:  # the server could not be asked: say so, invent nothing
            error = answer.get("error") or {"code": "unavailable", "message": "no answer"}
            return {
                "answer": f"The knowledge service at {self.url} is unavailable ({error.get('message')}); "
                "no answer is given.",
                "evidence_state": "unavailable",
                "sources": [],
                "library": None,
                "version": None,
                "correlation_id": correlation_id or _new_id(),
                "error": error,
            }
        return answer

    def brief(
        self,
        task: str,
        refs: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        limit: int = 8,
        retriever: str | None = None,
    ) -> BriefAnswer:
        answer = cast(BriefAnswer, self._tool("brief", locals()))
        answer.setdefault("items", [])
        return answer

    def resource(
        self,
        doc_id: str,
        path: str,
        revision: str | None = None,
        section: str | None = None,
        offset: int | None = None,
    ) -> ResourceAnswer:
        return cast(ResourceAnswer, self._tool("resource", locals()))

    def _tool(self, verb: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """Tool `verb` on the server, with the arguments of the method that asks (its
        `locals()`): the tool's parameters, named as the table names them (a test holds
        every method's signature to the table), and a filtering tool's `filters`."""
        tool = BY_VERB[verb]
        arguments = {p.name: _as_json(given[p.name]) for p in tool.params}
        return self.call(tool.name, {**arguments, **(given["filters"] if tool.filters else {})})

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Tool `name` on the server: its dict (whatever the HTTP status), or an
        `unavailable` error dict. Null arguments are left out."""
        tool = BY_NAME.get(name)
        route = f"/api/v1/{tool.verb if tool else name}"
        return self._request("POST", route, {k: v for k, v in arguments.items() if v is not None})

    def _request(self, method: str, route: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        headers = {"Accept": "application/json", **headers_of(CURRENT_ACTOR.get())}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            self.url + route, data=data, headers=headers, method=method
        )
        try:
            try:
                with self._opener().open(request, timeout=self.timeout) as response:
                    raw = response.read(MAX_ANSWER_BYTES + 1)
            except urllib.error.HTTPError as exc:  # 400 and 404 carry the handler's dict too
                with exc:
                    raw = exc.read(MAX_ANSWER_BYTES + 1)
                if exc.code in (401, 403):
                    return _unavailable(
                        f"the server refused the request ({exc.code}); check the token"
                    )
            if len(raw) > MAX_ANSWER_BYTES:
                return _unavailable("the answer was larger than any API answer can be")
            answer = load_untrusted(raw, ANSWER_DEPTH)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, not JSON
            return _unavailable(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
        if not isinstance(answer, dict):
            return _unavailable("the server's answer is not the API's JSON object")
        return answer

    def _opener(self) -> urllib.request.OpenerDirector:
        """An opener for one request, whose whole exchange (connect, headers, body) ends
        within the client's timeout: a server that drips its answer cannot hold a caller."""
        from ..bundle.web import opener

        return opener(self._allow_http, deadline=time.monotonic() + self.timeout)


def _as_json(value: Any) -> Any:
    """An argument as the API takes it: a sequence as a list, and a mapping (`revisions`,
    the one mapping parameter) as the schema's list of {id, revision} pairs."""
    if isinstance(value, Mapping):
        return [{"id": k, "revision": v} for k, v in value.items()]
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return value


def _unavailable(message: str) -> dict[str, Any]:
    return {"error": {"code": "unavailable", "message": message}}


def _new_id() -> str:
    """A random correlation id; uuid (and the platform module it loads) is imported on
    the first call, not by every process that imports the package."""
    import uuid

    return uuid.uuid4().hex
