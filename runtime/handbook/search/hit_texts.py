"""The text each search hit's excerpt is cut from, kept in ``search.bin`` (``entry_text``).

Rendering a hit used to read and hash its doc's content file to cut the excerpt: about
half of a search's time at 10,000 docs. The build now stores, per doc entry, the text an
excerpt is cut from (the entry's UTF-8 byte range of its content, less its heading line),
so a search touches only the search file, which was verified once when it was opened.

Each text is compressed on its own (raw deflate, RFC 1951) against one shared preset
dictionary (``entry_text_dict``, sample text of the library, at most 32 KiB): a passage
of a few hundred bytes compresses to about a third with the dictionary and to about half
without. Decompressing one takes a few microseconds, less than reading and
hashing a content file. Identical texts are stored once (``excerpt_text``, and per entry
the number of its text, ``entry_excerpt``): a library's includes, boilerplate sections
("See also", "Requirements") and docs with the same body repeat them, a quarter of the
compressed texts on msdocs-10k. Files written with one text per entry (``entry_text``)
read as they always did; files without either are read as before: the excerpt comes
from the content file.
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

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


def _packer(zdict: bytes) -> Any:
    return zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, zdict)


def compressed(texts: Iterable[bytes], zdict: bytes) -> list[bytes]:
    """Each text as raw deflate against `zdict`."""
    packer = Packer(zdict)
    return [packer.deflate(text) for text in texts]


def key(text: bytes) -> bytes:
    """What `Packer` tells equal texts by: a 16-byte digest."""
    return hashlib.blake2b(text, digest_size=16).digest()


class Packer:
    """Texts compressed one at a time as they are made, equal texts once: the build never
    holds every text (half a gigabyte at 100,000 docs), only the compressed ones and a
    16-byte digest of each distinct one.

    Each text is deflated by a copy of one compressor primed with the dictionary: the
    same bytes as a fresh compressor's, in a third of the time (priming hashes the
    32 KiB dictionary at level 9)."""

    def __init__(self, zdict: bytes) -> None:
        self.zdict = zdict
        self._primed = _packer(zdict)
        self._numbers: dict[bytes, int] = {}
        self.blob = bytearray()
        """Each distinct text, compressed, in the order of first appearance, joined (a
        million small bytes objects at 100,000 docs, then a copy to join them, cost
        about 200 MB more)."""
        self.offsets = array("I", [0])
        """Where each compressed text starts in `blob` (one final end)."""
        self.of = array("I")
        """Per text added, the number of its compressed text."""

    def __len__(self) -> int:
        """How many distinct texts."""
        return len(self.offsets) - 1

    def __getitem__(self, n: int) -> bytes:
        """Distinct text `n`, compressed."""
        return bytes(self.blob[self.offsets[n] : self.offsets[n + 1]])

    def deflate(self, text: bytes) -> bytes:
        packer = self._primed.copy()
        return bytes(packer.compress(text) + packer.flush())

    def add(self, text: bytes) -> None:
        k = key(text)
        self.add_packed(k, b"" if k in self._numbers else self.deflate(text))

    def add_packed(self, k: bytes, packed: bytes) -> None:
        """Add a text by its `key`, compressed by `deflate` elsewhere (a worker process);
        `packed` is read only the first time `k` is added."""
        number = self._numbers.get(k)
        if number is None:
            number = self._numbers[k] = len(self)
            self.blob += packed
            self.offsets.append(len(self.blob))
        self.of.append(number)

    def close(self) -> None:
        """No more texts: drop the digests that found equal texts."""
        self._numbers = {}


class HitTexts:
    """The stored excerpt texts of a search file, decompressed one at a time on demand;
    with `of`, entry i's text is text `of[i]`. Both the number and the text's offsets
    are checked when a hit needs them, so opening the file reads none of them (scanning
    the offsets took 5 to 10 ms of every open at 10,000 docs)."""

    def __init__(
        self,
        blob: memoryview,
        offsets: memoryview,
        zdict: memoryview,
        of: memoryview | None = None,
        need: Callable[[int, int], None] = lambda start, end: None,
    ) -> None:
        if len(zdict) > DICT_BYTES:
            raise ValueError("entry_text_dict is longer than deflate's window")
        if not offsets or offsets[0] != 0 or offsets[-1] != len(blob):
            raise ValueError("entry_text_offsets do not span entry_text")
        self.blob, self.offsets, self.zdict, self.of = blob, offsets, bytes(zdict), of
        self.need = need
        """Verifies a range of `blob` before it is read (the file's chunks; a no-op when
        the file was verified whole)."""

    def __len__(self) -> int:
        """How many entries have a text."""
        return len(self.offsets) - 1 if self.of is None else len(self.of)

    def __getitem__(self, entry: int) -> str:
        """Entry `entry`'s text; FormatError naming the search file when it does not
        inflate to UTF-8 (the file was verified, so it was built or signed wrong)."""
        n = entry if self.of is None else self.of[entry]
        try:
            if n >= len(self.offsets) - 1:
                raise ValueError(f"entry_excerpt names text {n} of {len(self.offsets) - 1}")
            start, end = self.offsets[n], self.offsets[n + 1]
            if not start <= end <= len(self.blob):
                raise ValueError(f"entry_text_offsets go backwards at text {n}")
            self.need(start, end)
            packed = self.blob[start:end]
            unpacker = zlib.decompressobj(-15, zdict=self.zdict)
            data = unpacker.decompress(packed)
            if not unpacker.eof or unpacker.unused_data:
                raise ValueError("a stored text does not end where its offsets say")
            return data.decode("utf-8")
        except (zlib.error, ValueError) as exc:
            raise FormatError(
                f"{SEARCH}: entry {entry}'s excerpt text is malformed ({exc}); rebuild the bundle"
            ) from None


def read(
    arrays: Mapping[str, memoryview],
    entries: int,
    need: Callable[[str, int, int], None] = lambda name, start, end: None,
) -> HitTexts | None:
    """The excerpt texts of a search file's `entries` doc entries: one text per distinct
    text (``excerpt_text``, ``entry_excerpt``), one per entry (``entry_text``, the first
    layout), or None when the file has neither. ValueError when they do not fit. `need`
    verifies a byte range of a named array before it is read (the file's chunks)."""
    if "entry_excerpt" in arrays:
        texts = HitTexts(
            arrays["excerpt_text"],
            arrays["excerpt_text_offsets"],
            arrays["excerpt_text_dict"],
            arrays["entry_excerpt"],
            need=lambda start, end: need("excerpt_text", start, end),
        )
    elif "entry_text" in arrays:
        texts = HitTexts(
            arrays["entry_text"],
            arrays["entry_text_offsets"],
            arrays["entry_text_dict"],
            need=lambda start, end: need("entry_text", start, end),
        )
    else:
        return None
    if len(texts) != entries:
        raise ValueError("the excerpt texts are not one per entry")
    return texts
