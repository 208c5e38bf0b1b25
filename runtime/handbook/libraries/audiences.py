"""Serving several audiences' bundles at once: each request reads its principal's only.

A library with audiences is built into one signed bundle per audience (the audience is
in the manifest). `handbook serve` given several of them serves an `AudienceRouter`:
the same tools, answered by the bundle of the asking principal's audience (the tokens
file's `audience=`, else `public`). The gate sets who is asking for the request
(`CURRENT_PRINCIPAL`) and refuses a principal whose audience is not served, so the
router never guesses: a restricted doc answers like an unknown one to everyone else,
because it is not in what they are served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..access.actor import CURRENT_PRINCIPAL
from ..access.principals import PUBLIC, Principals
from ..bundle.local import Bundle
from ..tools.served import Served


class AudienceRouter:
    """A `Served` whose every call is answered by the current principal's audience."""

    def __init__(self, by_audience: Mapping[str, Served], principals: Principals | None) -> None:
        self.by_audience, self.principals = dict(by_audience), principals

    def audience(self, principal: str | None) -> str:
        return self.principals.audience_of(principal) if self.principals else PUBLIC

    def admits(self, principal: str | None) -> bool:
        """Whether the principal's audience is served here (the gate refuses others)."""
        return self.audience(principal) in self.by_audience

    def current(self) -> Served:
        return self.by_audience[self.audience(CURRENT_PRINCIPAL.get())]

    def bundles(self) -> Mapping[str, Bundle]:
        """The asking principal's bundles. Outside a request (naming what is served, as
        MCP's instructions do) when no public bundle is served: each library by its name
        only, so no client is told which other audiences there are."""
        if CURRENT_PRINCIPAL.get() is None and not self.admits(None):
            return {
                name: bundle
                for served in self.by_audience.values()
                for name, bundle in served.bundles().items()
            }
        return self.current().bundles()

    def __getattr__(self, name: str) -> Any:  # every tool, status, bundles, tool_context
        return getattr(self.current(), name)
