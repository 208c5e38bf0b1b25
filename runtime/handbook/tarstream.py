"""The tar subset of bundle archives, as `handbook pack` writes it.

Bundle archives need very little of tar, and a subset written here, rather than what
`tarfile` chooses to write, is one that a strict reader can hold archives to: POSIX
ustar headers (magic ``ustar\\0``, version ``00``) for regular files and folders, and
before an entry whose name is longer than 100 bytes, a PAX header with a single
``path`` record (names are ASCII: a manifest lists no other). Modes, owners and times
are written fixed.
"""

from __future__ import annotations

from io import BufferedIOBase

BLOCK = 512
RECORD = 20 * BLOCK
"""The archive is padded with zeros to a multiple of this, as tar does."""

_MAGIC = b"ustar\x0000"
_FILE, _FOLDER, _PAX = b"0", b"5", b"x"


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
