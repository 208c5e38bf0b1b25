"""`handbook.query`, a documented path: the module is `handbook.search.query`."""

from handbook.search.query import *  # noqa: F403
