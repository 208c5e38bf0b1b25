"""`RemoteLibrary`: the same calls as `Library`, answered by a `handbook serve` elsewhere.

For an application whose knowledge lives in another process or on another machine.
The methods have `Library`'s signatures and return its dicts. When the server cannot
be reached, is too slow or answers with something that is not the API's JSON, nothing
raises: `ask` answers ``evidence_state: unavailable`` and the other calls an
``{"error": {"code": "unavailable", …}}`` dict, so the application's other functions
keep working (degraded mode) and recover by themselves when the server is back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024


class RemoteLibrary:
    """A client of `handbook serve`'s JSON API at `url` (the server's root)."""

    def __init__(
        self, url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r} is not an http(s) URL of a `handbook serve`")
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def status(self) -> dict[str, Any]:
        return self._call("status", {})

    def list(self, query: str | None = None, limit: int = 20, **filters: Any) -> dict[str, Any]:
        return self._call("list", {"query": query, "limit": limit, **filters})

    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> dict[str, Any]:
        return self._call(
            "get",
            {
                "id": doc_id,
                "section": section,
                "offset": offset or None,
                "revision": revision,
                "lang": lang,
            },
        )

    def search(self, query: str, limit: int = 10, lang: str | None = None) -> dict[str, Any]:
        return self._call("search", {"query": query, "limit": limit, "lang": lang})

    def resource(self, doc_id: str, path: str, revision: str | None = None) -> dict[str, Any]:
        return self._call("resource", {"id": doc_id, "path": path, "revision": revision})

    def collect(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        revisions: Mapping[str, str] | None = None,
        limit: int = 10,
        max_bytes: int = 32_000,
        **filters: Any,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"query": query, "limit": limit, "max_bytes": max_bytes, **filters}
        if ids is not None:
            params["ids"] = ",".join(str(i) for i in ids)
        if revisions:
            params["revisions"] = ",".join(f"{k}={v}" for k, v in revisions.items())
        answer = self._call("collect", params)
        if "items" not in answer:
            answer.setdefault("items", [])
            answer.setdefault("omissions", [])
            answer.setdefault("no_match", True)
        return answer

    def ask(
        self, question: str, limit: int = 3, correlation_id: str | None = None
    ) -> dict[str, Any]:
        answer = self._call("ask", {"question": question, "limit": limit})
        if "evidence_state" not in answer:  # the server could not be asked: say so, invent nothing
            error = answer.get("error", {})
            return {
                "answer": f"The knowledge service at {self.url} is unavailable ({error.get('message', 'no answer')}); no answer is given.",
                "evidence_state": "unavailable",
                "sources": [],
                "library": None,
                "version": None,
                "correlation_id": correlation_id or uuid.uuid4().hex,
                "error": error,
            }
        if correlation_id:
            answer["correlation_id"] = correlation_id
        return answer

    def _call(self, endpoint: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """GET /api/v1/<endpoint>; the API's dict (whatever its HTTP status), or an
        `unavailable` error dict."""
        import urllib.error
        import urllib.parse
        import urllib.request

        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        request = urllib.request.Request(
            f"{self.url}/api/v1/{endpoint}" + (f"?{query}" if query else ""),
            headers={
                "Accept": "application/json",
                **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
            },
        )
        try:
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    body = response.read(MAX_ANSWER_BYTES + 1)
            except urllib.error.HTTPError as exc:  # 400 and 404 carry the handler's dict too
                with exc:
                    body = exc.read(MAX_ANSWER_BYTES + 1)
                if exc.code in (401, 403):
                    return _unavailable(
                        f"the server refused the request ({exc.code}); check the token"
                    )
            if len(body) > MAX_ANSWER_BYTES:
                return _unavailable("the answer was larger than any API answer can be")
            answer = json.loads(body)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, not JSON
            return _unavailable(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
        if not isinstance(answer, dict):
            return _unavailable("the server's answer is not the API's JSON object")
        return answer


def _unavailable(message: str) -> dict[str, Any]:
    return {"error": {"code": "unavailable", "message": message}}
