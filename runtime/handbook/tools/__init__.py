"""The tool table and what is generated from it: parameters and output schemas, the
`Served` protocol every library satisfies, the one dispatch every transport calls, and
tool definitions in each host's shape (rank 2).

`handbook.tools.TOOLS` is a documented path: the table itself lives in `table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .table import TOOLS

__all__ = ["TOOLS"]


def __getattr__(name: str) -> Any:
    """`TOOLS`, imported when first asked for: importing a module of this package (the
    tool model, say) does not build the whole table."""
    if name != "TOOLS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .table import TOOLS

    return TOOLS
