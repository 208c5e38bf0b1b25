"""The signed manifest (``manifest.json``): the model the build writes and readers verify.

``{"signed": {spec, library, version, built_at, files, docs[, expires]}, "signatures": [...]}``

Every file of the bundle except the manifest and the content-addressed files is listed
under ``files`` with its sha256 and size: a handful of files, whatever the number of docs
(handbook/v2). Content and resource files are vouched for one level down, by the catalog
entry that names them (`handbook.bundle.local`). The whole manifest is written as
canonical JSON and read strictly: size cap, then canonical parse, then the
signed-payload profile, then the shape below. Only after that is the signature checked,
and only after the signature are the files trusted.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ..errors import FormatError
from . import canonical
from .layout import CONTENT_FOLDERS, MANIFEST

SPEC = "handbook/v2"
EARLIER_SPECS = frozenset({"handbook/v1"})
"""Major versions this release once wrote and now refuses: rebuilding is the remedy."""
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
MAX_PATH_CHARS = 512
MAX_PATH_DEPTH = 16
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ENTRY_KEYS = {"sha256", "bytes"}
_ISO_UTC = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
)  # ASCII digits only, not \d
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
_WINDOWS_DEVICES = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}


_CONTENT_PATH = re.compile(r"content/[0-9a-f]{64}\.md")
_BAD_CHAR = re.compile(r'[\x00-\x1f\x7f-\x9f\\:*?"<>|]')
_BAD_SEGMENT = re.compile(r"(?:^|/)(?:\.{1,2}|)(?:/|$)|[. ](?:/|$)")


def check_path(path: str) -> str | None:
    """Why `path` is not a safe bundle path, or None. A bundle path is relative POSIX,
    NFC, with no empty, `.` or `..` segments, no backslash, colon or control characters,
    no segment ending in a dot or space and no Windows device name — so it names one
    file on every system — and short enough that checking every listed path's folders
    stays linear (a 40 KB manifest with one 20,000-level path cost 390 MB before)."""
    if _CONTENT_PATH.fullmatch(path):  # nearly every path: the common case stays cheap
        return None
    if len(path) > MAX_PATH_CHARS or path.count("/") >= MAX_PATH_DEPTH:
        return f"is longer than {MAX_PATH_CHARS} characters or deeper than {MAX_PATH_DEPTH} folders"
    if not path or path.startswith("/") or _WINDOWS_DRIVE.match(path):
        return "is empty or absolute"
    if not unicodedata.is_normalized("NFC", path):
        return "is not NFC-normalized"
    if _BAD_CHAR.search(path):
        return "holds a backslash, colon or control character"
    if _BAD_SEGMENT.search(path):
        return "has an empty, '.' or '..' segment, or one ending in a dot or space"
    if any(part.split(".")[0].lower() in _WINDOWS_DEVICES for part in path.split("/")):
        return "names a Windows device (con, nul, com1, …)"
    return None


class FileEntry(NamedTuple):
    sha256: str
    bytes: int


class Signed(NamedTuple):
    """The signed payload."""

    library: str
    version: str
    built_at: str
    files: Mapping[str, FileEntry]
    docs: int
    expires: str | None = None
    spec: str = SPEC
    audience: str | None = None
    """Who may read the bundle (a library with audiences): signed, so one audience's
    bundle can never be served or accepted as another's."""
    unrecognized: Mapping[str, Any] = MappingProxyType({})
    """Signed keys this reader does not know, kept as they are (the format's version
    policy: a newer minor revision may add optional keys, and readers of the same major
    version accept them)."""

    @property
    def identity(self) -> str:
        """What update safety is kept per: the library, and its audience when it has one
        (an audience's versions never count as another's)."""
        return self.library if self.audience is None else f"{self.library}@{self.audience}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "spec": self.spec,
            "library": self.library,
            "version": self.version,
            "built_at": self.built_at,
            "files": {p: {"sha256": f.sha256, "bytes": f.bytes} for p, f in self.files.items()},
            "docs": self.docs,
        }
        if self.expires is not None:
            out["expires"] = self.expires
        if self.audience is not None:
            out["audience"] = self.audience
        return {**self.unrecognized, **out}

    @classmethod
    def from_dict(cls, data: Any) -> Signed:
        if isinstance(data, dict) and isinstance(data.get("spec"), str) and data["spec"] != SPEC:
            raise FormatError(_other_major(data["spec"]))
        known = {"spec", "library", "version", "built_at", "files", "docs"}
        _require_keys(data, "signed", known, {"expires", "audience"}, open_ended=True)
        for key in ("library", "version"):
            _require_type(data[key], str, f"signed.{key}")
        for key in ("built_at", "expires"):
            if key in data and not (
                isinstance(data[key], str)
                and _ISO_UTC.fullmatch(data[key])
                and utc_seconds(data[key]) is not None
            ):
                raise FormatError(
                    f"manifest.json: signed.{key} must be a UTC time like 2026-01-31T12:00:00Z"
                )
        _require_type(data["docs"], int, "signed.docs")
        if "audience" in data:
            _require_type(data["audience"], str, "signed.audience")
        _require_type(data["files"], dict, "signed.files")
        files = _files(data["files"])
        return cls(
            data["library"],
            data["version"],
            data["built_at"],
            files,
            data["docs"],
            data.get("expires"),
            data["spec"],
            data.get("audience"),
            MappingProxyType(
                {k: v for k, v in data.items() if k not in known | {"expires", "audience"}}
            ),
        )


def _other_major(spec: str) -> str:
    """Why a bundle of another major version is refused, and what to do about it."""
    if spec in EARLIER_SPECS:
        remedy = (
            "a bundle of another major version, built by an earlier Handbook release: "
            "rebuild it with this release (handbook build), or read it with a release of that version"
        )
    else:
        remedy = "a bundle of another major version: use a Handbook release that reads it"
    return f"manifest.json: spec is {spec!r}; this reader understands {SPEC!r} ({remedy})"


def _files(listed: dict[str, Any]) -> dict[str, FileEntry]:
    """The file list, checked; when anything is off, `_diagnose` finds the first bad
    entry and says what is wrong with it. The list holds a handful of files (content is
    not listed), so this costs the same at ten docs and at a hundred thousand."""
    paths, entries = list(listed), list(listed.values())
    if not all(type(e) is dict and e.keys() == _ENTRY_KEYS for e in entries):
        _diagnose(listed)
    digests, sizes = [e["sha256"] for e in entries], [e["bytes"] for e in entries]
    folded = {p.casefold() for p in paths}
    if not (
        all(type(d) is str and len(d) == 64 for d in digests)
        and _lower_hex("".join(digests))
        and all(type(n) is int and not isinstance(n, bool) for n in sizes)
        and len(folded) == len(paths)
        and MANIFEST not in listed
        and all(check_path(p) is None and _in_content_folder(p) is None for p in paths)
        and not _folders({p[: p.rfind("/")] for p in paths if "/" in p}) & folded
    ):
        _diagnose(listed)
    return dict(zip(paths, map(FileEntry, digests, sizes), strict=True))


def _in_content_folder(path: str) -> str | None:
    """Why `path` may not be listed: the content-addressed folders (case-folded, so no
    listed file can stand in for them on a case-insensitive disk) are the catalog's."""
    top = path.split("/", 1)[0].casefold()
    if top in CONTENT_FOLDERS:
        return (
            f"lies in {top}/, whose files {SPEC} manifests do not list "
            "(the catalog entry that names each one gives its sha256 and size)"
        )
    return None


def _folders(parents: set[str]) -> set[str]:
    """Every folder on the given parent paths, case-folded (a bundle has a few)."""
    return {
        "/".join(p.casefold().split("/")[:depth])
        for p in parents
        for depth in range(1, p.count("/") + 2)
    }


def _file_and_folder(paths: list[str]) -> str | None:
    """A listed path that is also a folder of another listed path (case-folded), or None."""
    clash = _folders({p[: p.rfind("/")] for p in paths if "/" in p}) & {p.casefold() for p in paths}
    return min(clash) if clash else None


def _lower_hex(text: str) -> bool:
    """Only the characters 0-9 and a-f (or nothing)."""
    if not (text.isascii() and text == text.lower()):
        return False
    even = text if len(text) % 2 == 0 else "0" + text
    try:
        return len(bytes.fromhex(even)) * 2 == len(even)  # fromhex skips whitespace
    except ValueError:
        return False


def _diagnose(listed: dict[str, Any]) -> None:
    """Raise FormatError naming the first bad entry of `listed`."""
    folded: dict[str, str] = {}
    for path, entry in listed.items():
        key = path.casefold()
        if key in folded:
            raise FormatError(
                f"manifest.json: file paths {folded[key]!r} and {path!r} differ only by case"
            )
        folded[key] = path
        problem = (
            check_path(path) or _in_content_folder(path)
            if path != MANIFEST
            else "is the manifest itself"
        )
        if problem:
            raise FormatError(f"manifest.json: file path {path!r} {problem}")
        _require_keys(entry, f"files[{path!r}]", _ENTRY_KEYS)
        if not (isinstance(entry["sha256"], str) and _SHA256.fullmatch(entry["sha256"])):
            raise FormatError(
                f"manifest.json: files[{path!r}].sha256 must be 64 lowercase hex digits"
            )
        _require_type(entry["bytes"], int, f"files[{path!r}].bytes")
    clash = _file_and_folder(list(listed))
    if clash:
        raise FormatError(
            f"manifest.json: {clash!r} is listed as a file and is also a folder of other listed files"
        )
    raise AssertionError("_diagnose found nothing wrong")  # pragma: no cover - _files saw a problem


class Manifest(NamedTuple):
    signed: Signed
    signatures: tuple[dict[str, str], ...] = ()
    signed_bytes: bytes | None = None
    """The canonical bytes of `signed` as read (None for a manifest built in memory)."""

    def canonical_signed(self) -> bytes:
        """What the signatures cover (less the tag)."""
        return (
            self.signed_bytes
            if self.signed_bytes is not None
            else canonical.dumps(self.signed.to_dict())
        )

    def to_dict(self) -> dict[str, Any]:
        return {"signed": self.signed.to_dict(), "signatures": [dict(s) for s in self.signatures]}

    def to_bytes(self) -> bytes:
        return canonical.dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        value = canonical.loads(data, what=MANIFEST, max_bytes=MAX_MANIFEST_BYTES, profile=True)
        _require_keys(value, "manifest", {"signed", "signatures"})
        _require_type(value["signatures"], list, "signatures")
        signatures = []
        for n, entry in enumerate(value["signatures"]):
            _require_keys(entry, f"signatures[{n}]", {"keyid", "sig"})
            if not (
                isinstance(entry["keyid"], str)
                and _SHA256.fullmatch(entry["keyid"])
                and isinstance(entry["sig"], str)
            ):
                raise FormatError(
                    f"manifest.json: signatures[{n}] needs a hex keyid and a base64 sig"
                )
            signatures.append({"keyid": entry["keyid"], "sig": entry["sig"]})
        # The bytes are canonical with exactly these two keys, so they read
        # {"signatures":[…],"signed":{…}}; signatures hold only hex and base64, so the
        # first ,"signed": is the structural one and what follows is the signed part's
        # canonical encoding — the signature covers these very bytes, not a re-encoding.
        start = data.index(b',"signed":') + len(b',"signed":')
        return cls(Signed.from_dict(value["signed"]), tuple(signatures), data[start:-1])


TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""Every time in a bundle: UTC, whole seconds, like 2026-01-31T12:00:00Z."""


_FIELDS = re.compile(
    r"(\d\d\d\d)-(1[0-2]|0[1-9]|[1-9])-(3[01]|[12]\d|0[1-9]|[1-9]| [1-9])"
    r"T(2[0-3]|[0-1]\d|\d):([0-5]\d|\d):(6[0-1]|[0-5]\d|\d)Z",
    re.IGNORECASE,
)
"""What `time.strptime(text, TIME_FORMAT)` accepts: its own pattern for each field."""


def utc_seconds(text: str) -> int | None:
    """Seconds since the epoch of a bundle time, or None when there is no such time
    (30 February, hour 24), not only one shaped like it. The answer of
    `calendar.timegm(time.strptime(text, TIME_FORMAT))`, computed here: every open checks
    `built_at`, and strptime's first call imports calendar, datetime and locale (9 ms of
    a 100 ms start)."""
    match = _FIELDS.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = map(int, match.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days_in = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not (year and 1 <= month <= 12 and 1 <= day <= days_in[month - 1]):
        return None
    if hour > 23 or minute > 59 or second > 61:  # strptime's %S takes leap seconds
        return None
    return _days(year, month, day) * 86400 + hour * 3600 + minute * 60 + second


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's
    days_from_civil)."""
    year -= month <= 2
    era, yoe = divmod(year, 400)
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def utc_time(seconds: float) -> str:
    return time.strftime(TIME_FORMAT, time.gmtime(seconds))


def _require_keys(
    data: Any,
    what: str,
    required: set[str],
    optional: Collection[str] = (),
    open_ended: bool = False,
) -> None:
    """`data` is an object with every `required` key; unless `open_ended`, no key but
    these and the `optional` ones."""
    if not isinstance(data, dict):
        raise FormatError(f"manifest.json: {what} must be an object")
    missing = required - data.keys()
    extra = set() if open_ended else data.keys() - required - set(optional)
    if missing or extra:
        raise FormatError(
            f"manifest.json: {what} has missing keys {sorted(missing)} / unknown keys {sorted(extra)}"
        )


def _require_type(value: Any, kind: type, what: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FormatError(f"manifest.json: {what} must be {kind.__name__}")
