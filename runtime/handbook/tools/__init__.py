"""The tool table and what is generated from it: parameters and output schemas, the
`Served` protocol every library satisfies, the one dispatch every transport calls, and
tool definitions in each host's shape (rank 2).

`handbook.tools.TOOLS` is a documented path: the table itself lives in `table`.
"""

from .table import TOOLS

__all__ = ["TOOLS"]
