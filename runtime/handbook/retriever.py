"""`handbook.retriever`, a documented path: the module is `handbook.search.retriever`."""

from handbook.search.retriever import *  # noqa: F403
