"""Hostile bundle archives are refused within budgets from the first byte.

Each archive is built here from the packed plant-floor bundle: tar bytes written entry
by entry (raw where `tarfile` would not write them), gzip-compressed as a stream where
they are large. A child process unpacks it and reports the refusal, the peak of its
resident set over the baseline just before the call (the kernel's high-water mark,
reset at the baseline), the bytes it wrote (``wchar`` of /proc/self/io) and the time.
The budgets: `MEMORY_BUDGET` over the baseline, and on disk no more than the genuine
bundle (what may be written before the hostile entry comes), nothing of it left behind.
Times are printed, never asserted; a line per archive (`pytest -s`) gives the figures
for the README's hardening table.

The structural refusals of the tar reader (headers, PAX records, the end of the archive)
are checked in process, each with its whole message.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
import tarfile
import textwrap
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PUBLIC, run_cli

from handbook.bundle.archive import unpack
from handbook.bundle.layout import CATALOG, MANIFEST
from handbook.bundle.local import open_bundle
from handbook.bundle.signing import generate_private_key
from handbook.bundle.trust import TrustPolicy
from handbook.errors import (
    FormatError,
    HashMismatchError,
    MissingFileError,
    SignatureError,
    UnlistedFileError,
)
from handbook_build.tasks.pack import pack

linux = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="reads the peak resident set from /proc"
)

MEMORY_BUDGET = 64 * 1024 * 1024
GIB = 1024**3
MEMBERS = 1_000_000

PROBE = textwrap.dedent("""
    import gc, json, re, sys, time
    from pathlib import Path
    from handbook.bundle.archive import unpack
    from handbook.errors import BundleError

    def status(key):
        with open("/proc/self/status") as f:
            return int(re.search(key + r":\\s+(\\d+) kB", f.read()).group(1)) * 1024

    def written():
        with open("/proc/self/io") as f:
            return int(re.search(r"wchar: (\\d+)", f.read()).group(1))

    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the high-water mark starts again from here
    base, before, start = status("VmRSS"), written(), time.perf_counter()
    try:
        unpack(sys.argv[1], Path(sys.argv[2]))
        error, kind = None, None
    except BundleError as exc:
        error, kind = str(exc), type(exc).__name__
    seconds, wrote, peak = time.perf_counter() - start, written() - before, status("VmHWM")
    print(json.dumps({"error": error, "kind": kind, "grown": peak - base, "written": wrote,
                      "seconds": seconds}))
""")


@dataclass
class Probed:
    error: str | None
    kind: str | None
    grown: int
    written: int
    seconds: float


def probe(archive: Path, into: Path) -> Probed:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(archive), str(into)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return Probed(**json.loads(run.stdout))


Member = tuple[tarfile.TarInfo, bytes]


@dataclass
class Genuine:
    members: list[Member]
    """The packed bundle's entries, manifest first."""
    size: int
    """The bytes of all its files: what a refused archive may have written."""

    def number(self, name: str) -> int:
        """The entry number of `name`, counting from 1."""
        return next(n for n, (info, _) in enumerate(self.members, 1) if info.name == name)

    def data(self, name: str) -> bytes:
        return self.members[self.number(name) - 1][1]


@pytest.fixture(scope="module")
def genuine(plant_floor_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Genuine:
    archive = tmp_path_factory.mktemp("genuine") / "bundle.tar.gz"
    pack(plant_floor_bundle, archive)
    with tarfile.open(archive, "r:gz") as tar:
        members = []
        for info in tar.getmembers():
            source = tar.extractfile(info) if info.isfile() else None
            members.append((info, source.read() if source else b""))
    return Genuine(members, sum(len(data) for _, data in members))


def entries(members: list[Member]) -> bytes:
    """Tar entries as `tarfile` writes them, without the end of the archive."""
    return b"".join(
        info.tobuf(tarfile.PAX_FORMAT) + data + bytes(-len(data) % 512) for info, data in members
    )


def entry(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, **fields: object) -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(data)
    for field, value in fields.items():
        setattr(info, field, value)
    return info, data


def write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(gzip.compress(b"".join(parts), mtime=0))
    return path


END = bytes(1024)


# == the hostile archives ==========================================================================


def pax_header(genuine: Genuine, path: Path) -> str:
    """1 MB of PAX header before the catalog: tarfile read it whole (and the rest)."""
    info, data = genuine.members[genuine.number(CATALOG) - 1]
    comment = "x" * 1_000_000
    info = tarfile.TarInfo(info.name)
    info.size, info.pax_headers = len(data), {"comment": comment}
    members = list(genuine.members)
    members[genuine.number(CATALOG) - 1] = (info, data)
    write(path, entries(members), END)
    size = len(f" comment={comment}\n") + 7  # the record's length counts its own 7 digits
    return (
        f"the extended header of entry {genuine.number(CATALOG)} is {size:,} bytes, "
        "over the 8,192 a bundle archive allows"
    )


def huge_pax_header(genuine: Genuine, path: Path) -> str:
    """An extended header of 1 GiB before the catalog, all of it there: zeros, as one
    16 MiB gzip member written 64 times (a gzip file may hold several)."""
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, GIB
    at = genuine.number(CATALOG) - 1
    zeros = gzip.compress(bytes(16 * 1024**2), compresslevel=1, mtime=0)
    with open(path, "wb") as out:
        out.write(gzip.compress(entries(genuine.members[:at]) + info.tobuf(tarfile.USTAR_FORMAT)))
        for _ in range(GIB // (16 * 1024**2)):
            out.write(zeros)
        out.write(gzip.compress(entries(genuine.members[at:]) + END))
    return (
        f"the extended header of entry {genuine.number(CATALOG)} is {GIB:,} bytes, "
        "over the 8,192 a bundle archive allows"
    )


def many_members(genuine: Genuine, path: Path) -> str:
    """A million empty files after the bundle, streamed through gzip: tarfile kept a
    TarInfo for each one before anything was checked."""
    template = tarfile.TarInfo("x/0000000").tobuf(tarfile.USTAR_FORMAT)
    head, tail = template[9:148], template[156:]
    checksum = sum(template[:148]) + 8 * ord(" ") + sum(template[156:]) - sum(b"x/0000000")
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(gz.compress(entries(genuine.members)))
        for start in range(0, MEMBERS, 10_000):
            names = (b"x/%07d" % n for n in range(start, start + 10_000))
            out.write(
                gz.compress(
                    b"".join(
                        name + head + b"%06o\0 " % (checksum + sum(name)) + tail for name in names
                    )
                )
            )
        out.write(gz.compress(END) + gz.flush())
    return "x/0000000 is not listed in the manifest"


def huge_member(genuine: Genuine, path: Path) -> str:
    """The catalog's header says 1 GiB, and a short body follows: refused from the
    header, or it would end in a truncation rather than this message."""
    info, _ = entry(CATALOG)
    info.size = GIB
    at = genuine.number(CATALOG) - 1
    write(path, entries(genuine.members[:at]), info.tobuf(tarfile.PAX_FORMAT), b"{" * 512)
    return (
        f"{CATALOG} is {GIB:,} bytes in the archive, {len(genuine.data(CATALOG)):,} in the manifest"
    )


def huge_manifest(genuine: Genuine, path: Path) -> str:
    info, _ = entry(MANIFEST)
    info.size = GIB
    write(path, info.tobuf(tarfile.PAX_FORMAT), b"{" * 512)
    return f"{MANIFEST} is {GIB:,} bytes, over the 16,777,216 a manifest may have"


def unlisted(genuine: Genuine, path: Path) -> str:
    write(path, entries([*genuine.members, entry("extra.txt", b"hello")]), END)
    return "extra.txt is not listed in the manifest"


def misnamed_content(genuine: Genuine, path: Path) -> str:
    """A content-addressed member (not listed: handbook/v2) whose bytes are not the ones
    its name hashes to."""
    name = "content/" + "0" * 64 + ".md"
    write(path, entries([*genuine.members, entry(name, b"# planted\n")]), END)
    digest = hashlib.sha256(b"# planted\n").hexdigest()
    return f"{name} holds bytes of sha256 {digest}, not the one it is named by"


def manifest_last(genuine: Genuine, path: Path) -> str:
    write(path, entries([*genuine.members[1:], genuine.members[0]]), END)
    return (
        f"the archive starts with {genuine.members[1][0].name}, not {MANIFEST} "
        "(archives from `handbook pack` before the manifest came first must be packed again)"
    )


def size_mismatch(genuine: Genuine, path: Path) -> str:
    at = genuine.number(CATALOG) - 1
    data = genuine.data(CATALOG) + b" "
    members = list(genuine.members)
    members[at] = entry(CATALOG, data)
    write(path, entries(members), END)
    return f"{CATALOG} is {len(data):,} bytes in the archive, {len(data) - 1:,} in the manifest"


def symlink(genuine: Genuine, path: Path) -> str:
    link = entry("evil", b"", tarfile.SYMTYPE, linkname="/etc/passwd")
    write(path, entries([*genuine.members, link]), END)
    return "evil is a link or special file; bundle archives hold files and folders only"


def duplicate(genuine: Genuine, path: Path) -> str:
    twice = entry(CATALOG, genuine.data(CATALOG))
    write(path, entries([*genuine.members, twice]), END)
    return f"{CATALOG} appears twice in the archive"


def gnu_long_name(genuine: Genuine, path: Path) -> str:
    """A GNU long-name header (``././@LongLink``, type L) of 1 GiB, never read."""
    info, _ = entry("x" * 200)
    gnu = info.tobuf(tarfile.GNU_FORMAT)
    header = gnu[:124] + b"%011o\0" % GIB + gnu[136:148] + b" " * 8 + gnu[156:512]
    header = header[:148] + b"%06o\0 " % sum(header) + header[156:]
    write(path, entries(genuine.members), header, b"x" * 512)
    return (
        f"not a readable .tar.gz bundle archive (entry {len(genuine.members) + 1} "
        "is not a POSIX ustar header)"
    )


HOSTILE: dict[str, tuple[Callable[[Genuine, Path], str], type[Exception]]] = {
    "1 MB PAX header": (pax_header, FormatError),
    "PAX header of 1 GiB (zeros)": (huge_pax_header, FormatError),
    "1,000,000 tiny members": (many_members, UnlistedFileError),
    "member of 1 GiB declared": (huge_member, HashMismatchError),
    "manifest of 1 GiB declared": (huge_manifest, FormatError),
    "member not listed": (unlisted, UnlistedFileError),
    "content member not named by its hash": (misnamed_content, HashMismatchError),
    "manifest not first": (manifest_last, FormatError),
    "size differs from the manifest": (size_mismatch, HashMismatchError),
    "symlink": (symlink, FormatError),
    "duplicate": (duplicate, FormatError),
    "GNU long name of 1 GiB": (gnu_long_name, FormatError),
}


HASHED_AFTER_WRITING = {"content member not named by its hash": len(b"# planted\n")}
"""Bytes a case may write beyond the genuine bundle: a content member (not listed, so
no listed size to hold it to) is hashed as it is written, within MAX_TOTAL_BYTES in all,
and removed with everything else when its hash is not its name."""


def report(what: str, probed: Probed, outcome: str) -> None:
    print(
        f"\n[archives] {what}: attempts 1, {outcome}, peak memory "
        f"{probed.grown / 1024:,.0f} kB over baseline, {probed.written:,} bytes written, "
        f"{probed.seconds * 1000:.0f} ms"
    )


@linux
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_archive_is_refused_within_budget(
    genuine: Genuine, tmp_path: Path, case: str
) -> None:
    make, error = HOSTILE[case]
    archive = tmp_path / "hostile.tar.gz"
    message = make(genuine, archive)
    out = tmp_path / "out"
    out.mkdir()
    probed = probe(archive, out / "bundle")
    report(case, probed, "accepted 0")
    assert (probed.error, probed.kind) == (f"{archive}: {message}", error.__name__)
    assert probed.grown <= MEMORY_BUDGET
    assert probed.written <= genuine.size + HASHED_AFTER_WRITING.get(case, 0)
    assert list(out.iterdir()) == [], "a refused archive leaves nothing behind"


@linux
def test_the_genuine_archive_is_accepted_within_the_same_budget(
    genuine: Genuine, plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """The control: the packed bundle unpacks whole, and verifies."""
    archive = write(tmp_path / "bundle.tar.gz", entries(genuine.members), END)
    probed = probe(archive, tmp_path / "bundle")
    report("genuine archive", probed, "accepted")
    assert probed.error is None
    assert probed.grown <= MEMORY_BUDGET
    assert probed.written == genuine.size
    assert open_bundle(tmp_path / "bundle", [PUBLIC]).signature_state == "verified"


# == the tar reader's own refusals ================================================================


def header(name: bytes = b"manifest.json", size: int = 0, kind: bytes = b"0") -> bytearray:
    info = tarfile.TarInfo("n")
    info.size, info.type = size, kind
    block = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    block[: len(name) + 1] = name + b"\0"
    return block


def summed(block: bytearray) -> bytes:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def patched(offset: int, value: bytes) -> bytes:
    """The manifest's header with `value` at `offset`, and its checksum made right."""
    block = header()
    block[offset : offset + len(value)] = value
    return summed(block)


def pax(record: bytes) -> bytes:
    return summed(header(b"././@PaxHeader", len(record), b"x")) + record.ljust(512, b"\0")


FILE = summed(header(b"manifest.json", 2)) + b"{}".ljust(512, b"\0")

UNREADABLE: dict[str, tuple[bytes, str]] = {
    "gnu magic": (patched(257, b"ustar  \0"), "entry 1 is not a POSIX ustar header"),
    "checksum": (bytes(header()), "the header checksum of entry 1 does not match"),
    "prefix": (patched(345, b"bundle"), "entry 1 uses the ustar name prefix"),
    "size not octal": (patched(124, b"0000000009\0"), "the size of entry 1 is not an octal number"),
    "size in base 256": (
        patched(124, b"\x80" + bytes(10) + b"\x01"),
        "the size of entry 1 is not an octal number",
    ),
    "name not utf-8": (patched(0, b"\xff\0"), "the name of entry 1 is not UTF-8"),
    "two extended headers": (
        pax(b"17 path=manifest\n") * 2 + FILE,
        "entry 1 has two extended headers",
    ),
    "extended header at the end": (
        pax(b"22 path=manifest.json\n") + END,
        "entry 1 is an extended header with no entry after it",
    ),
    "pax length": (
        pax(b"99 path=manifest.json\n") + FILE,
        "the extended header of entry 1 is not one PAX record",
    ),
    "pax two records": (
        pax(b"9 path=a\n9 path=b\n") + FILE,
        "the extended header of entry 1 is not one PAX record",
    ),
    "pax key": (
        pax(b"14 comment=xx\n") + FILE,
        "the extended header of entry 1 sets 'comment'; only 'path' is read",
    ),
    "pax name not utf-8": (pax(b"9 path=\xff\n") + FILE, "the name of entry 1 is not UTF-8"),
    "folder with data": (
        summed(header(b"content/", 512, b"5")) + bytes(512),
        "folder content/ carries 512 bytes of data",
    ),
    "lone zero block": (bytes(512) + FILE, "a zero block stands in the middle of the archive"),
    "data after the end": (END + b"junk", "data follows the end of the archive"),
    "ends in a header": (FILE[:100], "it ends inside the header of entry 1"),
    "ends in the data": (
        summed(header(b"manifest.json", 2000)) + b"{}",
        "it ends inside the data of manifest.json",
    ),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_the_reader_refuses_what_pack_never_writes(tmp_path: Path, case: str) -> None:
    raw, problem = UNREADABLE[case]
    archive = write(tmp_path / "odd.tar.gz", raw)
    with pytest.raises(FormatError) as refused:
        unpack(archive, tmp_path / "out")
    assert str(refused.value) == f"{archive}: not a readable .tar.gz bundle archive ({problem})"
    assert not (tmp_path / "out").exists()


def test_a_global_header_is_an_entry_type_bundle_archives_do_not_use(tmp_path: Path) -> None:
    archive = write(tmp_path / "global.tar.gz", patched(156, b"g"), END)
    with pytest.raises(FormatError) as refused:
        unpack(archive, tmp_path / "out")
    assert str(refused.value) == (
        f"{archive}: entry 1 ('manifest.json') is of tar type 'g'; "
        "bundle archives hold files and folders only"
    )


def test_a_bad_manifest_is_named_with_the_archive(tmp_path: Path) -> None:
    archive = write(tmp_path / "bad.tar.gz", FILE, END)
    with pytest.raises(FormatError) as refused:
        unpack(archive, tmp_path / "out")
    assert str(refused.value) == (
        f"{archive}: {MANIFEST}: manifest has missing keys ['signatures', 'signed'] / unknown keys []"
    )


def test_a_listed_file_missing_from_the_archive_is_named(genuine: Genuine, tmp_path: Path) -> None:
    name = genuine.members[-1][0].name
    archive = write(tmp_path / "short.tar.gz", entries(genuine.members[:-1]), END)
    with pytest.raises(MissingFileError) as refused:
        unpack(archive, tmp_path / "out")
    assert (
        str(refused.value) == f"{archive}: {name} is listed in the manifest but not in the archive"
    )
    assert not (tmp_path / "out").exists()


def test_an_unreferenced_content_member_is_refused_by_verify(
    genuine: Genuine, tmp_path: Path
) -> None:
    """A well-named content member no catalog entry refers to: unpacking writes it (its
    bytes hash to its name, within the caps), and verifying the unpacked bundle, as
    `handbook verify` of the archive does, refuses it by name."""
    data = b"# planted, named by its own hash\n"
    name = f"content/{hashlib.sha256(data).hexdigest()}.md"
    archive = write(
        tmp_path / "planted.tar.gz", entries([*genuine.members, entry(name, data)]), END
    )
    folder = unpack(archive, tmp_path / "out")
    with pytest.raises(UnlistedFileError, match=f"{name}: present in the bundle but referred to"):
        open_bundle(folder, [PUBLIC])
    run = run_cli("verify", str(archive), "--key", PUBLIC)
    assert run.exit_code == 1 and name in run.stderr


def test_an_untrusted_archive_is_refused_before_anything_is_written(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """With a trust policy (as `handbook verify` gives), the manifest's signature is
    checked before the rest is unpacked: an archive signed by a stranger costs no disk."""
    archive = tmp_path / "bundle.tar.gz"
    pack(plant_floor_bundle, archive)
    _, stranger = generate_private_key()
    with pytest.raises(SignatureError):
        unpack(archive, tmp_path / "refused", TrustPolicy.of([stranger]))
    assert not (tmp_path / "refused").exists()
    assert (unpack(archive, tmp_path / "trusted", TrustPolicy.of([PUBLIC])) / MANIFEST).is_file()
    run = run_cli("verify", str(archive), "--key", str(stranger))
    assert run.exit_code == 1 and "refused:" in run.stderr
