"""The text each search hit's excerpt is cut from, kept in ``search.bin`` (``entry_text``).

Rendering a hit used to read and hash its doc's content file to cut the excerpt: about
half of a search's time at 10,000 docs. The build now stores, per doc entry, the text an
excerpt is cut from (the entry's UTF-8 byte range of its content, less its heading line),
so a search touches only the search file, which was verified once when it was opened.

Each text is compressed on its own (raw deflate, RFC 1951) against one shared preset
dictionary (``entry_text_dict``, sample text of the library, at most 32 KiB): a passage
of a few hundred bytes compresses to about a third with the dictionary and to about half
without. Decompressing one takes a few microseconds, less than reading and
hashing a content file. Files without these arrays (written before them) are read as
before: the excerpt comes from the content file.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence

from ..bundle.layout import SEARCH
from ..errors import FormatError

DICT_BYTES = 32768
"""deflate's window: a preset dictionary longer than this is never referred to."""
DICT_SAMPLE = 200
"""Texts the dictionary is sampled from."""


def excerpt_text(content: bytes, start: int, end: int) -> str:
    """The text an excerpt of the entry at bytes `start`..`end` of `content` is cut from:
    the range, less its heading line (an entry's first line is its heading)."""
    text = content[start:end].decode("utf-8", "replace")
    return text.split("\n", 1)[1] if text.startswith("#") and "\n" in text else text


def dictionary(texts: Sequence[bytes]) -> bytes:
    """A preset dictionary for `texts`: DICT_SAMPLE of them, evenly spread, joined, their
    last DICT_BYTES. Sample text beat the corpus's most common lines: 0.31 of the texts'
    size against 0.44 on synthetic docs, 0.35 for both on msdocs-10k."""
    step = max(1, len(texts) // DICT_SAMPLE)
    return b"\n".join(texts[::step])[-DICT_BYTES:]


def compressed(texts: Iterable[bytes], zdict: bytes) -> list[bytes]:
    """Each text as raw deflate against `zdict`."""
    out = []
    for text in texts:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, zdict)
        out.append(packer.compress(text) + packer.flush())
    return out


class HitTexts:
    """The stored excerpt texts of a search file, decompressed one at a time on demand."""

    def __init__(
        self,
        blob: memoryview,
        offsets: memoryview,
        zdict: memoryview,
        need: Callable[[int, int], None] = lambda start, end: None,
    ) -> None:
        if len(zdict) > DICT_BYTES:
            raise ValueError("entry_text_dict is longer than deflate's window")
        starts = offsets.tolist()  # where each text starts: ascending, inside the blob
        if starts != sorted(starts):  # compared in C: 46,000 offsets at 10,000 docs
            raise ValueError("entry_text_offsets go backwards")
        if not starts or starts[0] != 0 or starts[-1] != len(blob):
            raise ValueError("entry_text_offsets do not span entry_text")
        self.blob, self.offsets, self.zdict = blob, offsets, bytes(zdict)
        self.need = need
        """Verifies a range of `blob` before it is read (the file's chunks; a no-op when
        the file was verified whole)."""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, entry: int) -> str:
        """Entry `entry`'s text; FormatError naming the search file when it does not
        inflate to UTF-8 (the file was verified, so it was built or signed wrong)."""
        start, end = self.offsets[entry], self.offsets[entry + 1]
        self.need(start, end)
        packed = self.blob[start:end]
        try:
            unpacker = zlib.decompressobj(-15, zdict=self.zdict)
            data = unpacker.decompress(packed)
            if not unpacker.eof or unpacker.unused_data:
                raise ValueError("a stored text does not end where its offsets say")
            return data.decode("utf-8")
        except (zlib.error, ValueError) as exc:
            raise FormatError(
                f"{SEARCH}: entry {entry}'s excerpt text is malformed ({exc}); rebuild the bundle"
            ) from None
