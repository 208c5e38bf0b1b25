"""``vectors.bin``: one sentence embedding per search entry, for the semantic retriever.

Layout (little-endian): ``b"HBVECTOR"``, a uint32 version (1), a uint32 header length,
a JSON header ``{"model", "model_sha256", "dim", "count", "dtype": "float16"}`` padded
with spaces to 8 bytes, then ``count`` rows of ``dim`` float16 values, row n the unit
vector of search entry n (the numbering of ``search.bin``). The manifest lists and
signs it like every file; it is an additive file under the format's version policy, so
older readers verify it and ignore it. This module only reads and writes the bytes; it
imports numpy, so only the semantic retriever and the build use it.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..bundle.layout import VECTORS
from ..errors import FormatError

MAGIC = b"HBVECTOR"
VERSION = 1


class VectorFile(NamedTuple):
    model: str
    model_sha256: str
    """The sha256 of the weights the vectors were computed with."""
    vectors: NDArray[np.float16]


def write(model: str, model_sha256: str, vectors: NDArray[np.float32]) -> bytes:
    """The file's bytes for `vectors` (rows in search-entry order)."""
    count, dim = vectors.shape
    header = json.dumps(
        {
            "count": count,
            "dim": dim,
            "dtype": "float16",
            "model": model,
            "model_sha256": model_sha256,
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    header += b" " * (-len(header) % 8)
    body = np.ascontiguousarray(vectors, dtype="<f2").tobytes()
    return MAGIC + VERSION.to_bytes(4, "little") + len(header).to_bytes(4, "little") + header + body


def read(data: bytes, entries: int) -> VectorFile:
    """The vectors of a verified file, checked to hold one row per search entry."""
    if data[:8] != MAGIC or int.from_bytes(data[8:12], "little") != VERSION:
        raise FormatError(f"{VECTORS}: not a version {VERSION} vector file")
    try:
        size = int.from_bytes(data[12:16], "little")
        header = json.loads(data[16 : 16 + size])
        count, dim = int(header["count"]), int(header["dim"])
        if header["dtype"] != "float16" or count != entries or dim < 1:
            raise ValueError(f"{count} rows of {header['dtype']} for {entries} search entries")
        body = data[16 + size :]
        if len(body) != count * dim * 2:
            raise ValueError(f"{len(body)} bytes of vectors, expected {count * dim * 2}")
        vectors = np.frombuffer(body, dtype="<f2").reshape(count, dim)
        return VectorFile(str(header["model"]), str(header["model_sha256"]), vectors)
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(f"{VECTORS}: malformed ({exc})") from None
