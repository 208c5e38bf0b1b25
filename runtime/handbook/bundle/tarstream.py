"""The tar subset of bundle archives: written by `handbook pack`, read as a stream.

Why not `tarfile`: it reads an extended (PAX) header whole, whatever size the header
declares, before anything can look at it (1 GiB of zeros in one cost 1 GB of memory and
20 s), and keeps a `TarInfo` for every member it has seen (a million empty members:
436 MB, 40 s), so an archive's limits could only be checked once the damage was done.
Bundle archives need very little of tar, so this module writes that little and reads
nothing else, one header at a time: every size is checked before anything of that size
is read, and nothing is kept from one entry to the next.

The subset: POSIX ustar headers (magic ``ustar\\0``, version ``00``) for regular files
and folders, and before an entry whose name is longer than 100 bytes, a PAX header with
a single ``path`` record (names are ASCII: a manifest lists no other). The reader
refuses any other entry type (links, devices, FIFOs, GNU long names, global headers),
the ustar name prefix, other PAX records, an extended header over `MAX_EXTENDED_HEADER`
bytes, and anything but zeros after the end of the archive. Modes, owners and times are
written fixed and never applied. A name written here is a path on disk, so it fits
PATH_MAX (4,096 bytes on Linux) and its PAX header the cap.

What an entry may be (listed in the manifest, of its listed size, in which order) is
`handbook.bundle.archive`'s to decide.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import BufferedIOBase
from typing import NamedTuple, NoReturn

from ..errors import FormatError

BLOCK = 512
RECORD = 20 * BLOCK
"""The archive is padded with zeros to a multiple of this, as tar does."""
MAX_EXTENDED_HEADER = 8 * 1024
CHUNK = 1 << 20
"""The most file data held in memory at once."""

_ZERO = bytes(BLOCK)
_MAGIC = b"ustar\x0000"
_FILE, _FOLDER, _PAX = b"0", b"5", b"x"
_LINKS_AND_SPECIAL = {b"1", b"2", b"3", b"4", b"6"}


class Entry(NamedTuple):
    """A file or a folder of the archive; `number` counts from 1 at the first entry."""

    number: int
    name: str
    size: int
    folder: bool


class TarWriter:
    """Writes entries to `out`, which is left open; `close` ends the archive."""

    def __init__(self, out: BufferedIOBase, mtime: int) -> None:
        self._out = out
        self._mtime = mtime
        self._written = 0

    def add_folder(self, name: str) -> None:
        self._entry(name + "/", 0, _FOLDER, 0o755)

    def add_file(self, name: str, data: bytes) -> None:
        self._entry(name, len(data), _FILE, 0o644)
        self._write(data + bytes(-len(data) % BLOCK))

    def close(self) -> None:
        """The end of the archive: two zero blocks, then zeros to a whole record."""
        self._write(bytes(2 * BLOCK))
        self._write(bytes(-self._written % RECORD))

    def _entry(self, name: str, size: int, kind: bytes, mode: int) -> None:
        raw = name.encode("ascii")  # a manifest's paths are ASCII
        if len(raw) > 100:
            record = _pax_record(b"path", raw)
            self._write(_header(b"././@PaxHeader", len(record), self._mtime, _PAX, 0o644))
            self._write(record + bytes(-len(record) % BLOCK))
        self._write(_header(raw[:100], size, self._mtime, kind, mode))

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._written += len(data)


def _header(name: bytes, size: int, mtime: int, kind: bytes, mode: int) -> bytes:
    zero = b"%07o\x00" % 0
    block = b"".join(
        [
            name.ljust(100, b"\x00"),
            b"%07o\x00" % mode,
            zero,  # uid
            zero,  # gid
            b"%011o\x00" % size,
            b"%011o\x00" % mtime,
            b" " * 8,  # the checksum counts its own field as spaces
            kind,
            bytes(100),  # link name
            _MAGIC,
            bytes(64),  # owner and group names
            zero,  # device major
            zero,  # device minor
        ]
    ).ljust(BLOCK, b"\x00")
    return block[:148] + b"%06o\x00 " % sum(block) + block[156:]


def _pax_record(key: bytes, value: bytes) -> bytes:
    """``"<length> <key>=<value>\\n"``, where the length counts its own digits."""
    body = b" " + key + b"=" + value + b"\n"
    digits = len(str(len(body)))
    if len(str(len(body) + digits)) > digits:
        digits += 1
    return b"%d" % (len(body) + digits) + body


class TarReader:
    """Reads the entries of a decompressed archive from `stream`, one at a time: `next`
    gives the next entry, and `data` must give a file's bytes before `next` is called
    again. Errors are `FormatError`s naming `shown`, the archive."""

    def __init__(self, stream: BufferedIOBase, shown: str) -> None:
        self._stream = stream
        self._shown = shown
        self._count = 0
        self._pending = False

    def next(self) -> Entry | None:
        """The next file or folder, or None at the end of the archive."""
        assert not self._pending, "the data of the previous entry was not read"
        number = self._count + 1
        path: str | None = None
        while True:
            block = self._exact(BLOCK, f"the header of entry {number}")
            if block == _ZERO:
                if path is not None:
                    self._refuse(f"entry {number} is an extended header with no entry after it")
                self._end()
                return None
            name, kind, size = self._parse(block, number)
            if kind != _PAX:
                break
            if path is not None:
                self._refuse(f"entry {number} has two extended headers")
            if size > MAX_EXTENDED_HEADER:
                raise FormatError(
                    f"{self._shown}: the extended header of entry {number} is {size:,} bytes, "
                    f"over the {MAX_EXTENDED_HEADER:,} a bundle archive allows"
                )
            data = self._exact(size + -size % BLOCK, "an extended header")
            path = self._path(data[:size], number)
        name = path if path is not None else name
        if kind in _LINKS_AND_SPECIAL:
            raise FormatError(
                f"{self._shown}: {name} is a link or special file; bundle archives hold files and folders only"
            )
        if kind not in (_FILE, _FOLDER):
            raise FormatError(
                f"{self._shown}: entry {number} ({name!r}) is of tar type {kind.decode('latin-1')!r}; "
                "bundle archives hold files and folders only"
            )
        folder = kind == _FOLDER
        if folder and size:
            self._refuse(f"folder {name} carries {size:,} bytes of data")
        self._count = number
        self._pending = not folder
        return Entry(number, name.removesuffix("/") if folder else name, size, folder)

    def data(self, entry: Entry) -> Iterator[bytes]:
        """The bytes of the file `entry` (just returned by `next`), a chunk at a time."""
        left = entry.size
        while left:
            chunk = self._exact(min(left, CHUNK), f"the data of {entry.name}")
            left -= len(chunk)
            yield chunk
        self._exact(-entry.size % BLOCK, f"the data of {entry.name}")
        self._pending = False

    def _parse(self, block: bytes, number: int) -> tuple[str, bytes, int]:
        """Name, type and size of a header block, checked."""
        if block[257:265] != _MAGIC:
            self._refuse(f"entry {number} is not a POSIX ustar header")
        checksum = self._octal(block[148:156], "checksum", number)
        if checksum != sum(block[:148]) + 8 * ord(" ") + sum(block[156:]):
            self._refuse(f"the header checksum of entry {number} does not match")
        if block[345:500].strip(b"\x00"):
            self._refuse(f"entry {number} uses the ustar name prefix")
        try:
            name = block[:100].split(b"\x00", 1)[0].decode("utf-8")
        except UnicodeDecodeError:
            self._refuse(f"the name of entry {number} is not UTF-8")
        return name, block[156:157], self._octal(block[124:136], "size", number)

    def _octal(self, field: bytes, what: str, number: int) -> int:
        digits = field.rstrip(b"\x00 ").lstrip(b" ")
        if not digits or digits.strip(b"01234567"):
            self._refuse(f"the {what} of entry {number} is not an octal number")
        return int(digits, 8)

    def _path(self, data: bytes, number: int) -> str:
        """The name in an extended header, which must hold one ``path`` record."""
        length, _, record = data.partition(b" ")
        if not (length == b"%d" % len(data) and record.endswith(b"\n") and b"=" in record):
            self._refuse(f"the extended header of entry {number} is not one PAX record")
        key, _, value = record[:-1].partition(b"=")
        if key != b"path":
            shown = key.decode("latin-1")
            self._refuse(
                f"the extended header of entry {number} sets {shown!r}; only 'path' is read"
            )
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            self._refuse(f"the name of entry {number} is not UTF-8")

    def _end(self) -> None:
        """Past the first zero block: a second one, then at most a record of zeros."""
        if self._exact(BLOCK, "the end of the archive") != _ZERO:
            self._refuse("a zero block stands in the middle of the archive")
        rest = self._stream.read(RECORD)
        if rest.strip(b"\x00") or self._stream.read(1):
            self._refuse("data follows the end of the archive")

    def _exact(self, size: int, what: str) -> bytes:
        data = self._stream.read(size)
        while len(data) < size and (more := self._stream.read(size - len(data))):
            data += more
        if len(data) < size:
            self._refuse(f"it ends inside {what}")
        return data

    def _refuse(self, problem: str) -> NoReturn:
        raise FormatError(f"{self._shown}: not a readable .tar.gz bundle archive ({problem})")
