"""lunr's Porter stemmer, the one the index was built with, made safe to share.

lunr.py's stemmer keeps its working state on the instance, so two threads stemming at
once would corrupt each other's words: calls are serialized, and cached, since queries
repeat the same few thousand words.
"""

from __future__ import annotations

import threading
from functools import lru_cache

from lunr.stemmer import PorterStemmer

_stemmer = PorterStemmer()
_lock = threading.Lock()


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    with _lock:
        return str(_stemmer.stem(word))
