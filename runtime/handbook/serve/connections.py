"""How many connections `handbook serve` holds, and for how long, so that idle or slow
clients cannot starve the others.

uvicorn closes a connection that idles after a response, but not one that never sends
a request, or sends its headers a byte at a time (slowloris): a thousand of those used
to exhaust the process's file descriptors. `guarded_protocol` makes uvicorn's HTTP/1.1
protocol keep three rules:

- a request's headers must be complete within `header_seconds` of the connection
  opening (or of the previous response), or the connection is closed;
- at most `max_connections` are open; when another arrives, the oldest connection that
  has no request in progress is closed to make room (a client that is being answered is
  never dropped for a newcomer);
- the process's soft limit of open files is raised to its hard limit at start
  (`raise_file_limit`), so the cap, not the system, decides.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from typing import Any, NamedTuple


class Limits(NamedTuple):
    max_connections: int = 1000
    header_seconds: float = 10.0


def guarded_protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol under `limits` (give it to `uvicorn.Config(http=…)`).
    uvicorn is imported here, not when the command line starts."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting: OrderedDict[Any, None] = OrderedDict()
    """Open connections with no request in progress, oldest first (per server)."""

    class Guarded(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._answered: Any = None
            """The request cycle last answered on this connection (None before the first)."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            while len(self.connections) > limits.max_connections and waiting:
                oldest, _ = waiting.popitem(last=False)
                oldest.transport.close()
            self._wait()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._answered:  # headers complete
                self._stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._answered = self.cycle
            if not self.transport.is_closing():
                self._wait()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait(self) -> None:
            """Start waiting for the next request's headers."""
            self._stop_waiting()
            waiting[self] = None
            self._deadline = self.loop.call_later(limits.header_seconds, self._too_slow)

        def _stop_waiting(self) -> None:
            waiting.pop(self, None)
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            waiting.pop(self, None)
            self.transport.close()

    return Guarded


def raise_file_limit() -> int:
    """Raise the soft limit of open files to the hard limit where allowed; the limit now."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on this platform
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return soft
