"""The one exception tree of the runtime.

::

    HandbookError
    ├── KeyFormatError          a trusted or signing key is malformed or unsafe
    ├── BundleError             a bundle that must not be served
    │   ├── FormatError         not a handbook/v1 bundle, or not strictly canonical
    │   ├── SignatureError      no valid signature by enough trusted keys
    │   ├── HashMismatchError   a file's size or sha256 differs from the manifest
    │   │   └── BundleChangedError  a remote bundle was replaced while it was being read
    │   ├── MissingFileError    a file the manifest lists is absent
    │   ├── UnlistedFileError   a file the manifest does not list is present
    │   ├── ExpiredError        the signed manifest's `expires` time has passed
    │   ├── RollbackError       older than (or differing at) the version already accepted
    │   ├── LibraryMismatchError signed for another library than the one expected
    │   └── DownloadError       a remote bundle could not be fetched within its limits
    └── SkillsError             a library that cannot be written as Agent Skills

Messages name the file, what was observed and what was expected, so an operator can
act on them; the CLI maps every `BundleError` to exit 1.
"""

from __future__ import annotations


class HandbookError(Exception):
    """Base class of every error the runtime raises on purpose."""


class KeyFormatError(HandbookError, ValueError):
    """A key string or key file that cannot be used."""


class BundleError(HandbookError):
    """The bundle is refused; nothing from it is served."""


class FormatError(BundleError):
    """The bytes are not a well-formed, canonical handbook/v1 bundle."""


class SignatureError(BundleError):
    """The manifest is not signed by enough trusted keys."""


class HashMismatchError(BundleError):
    """A file differs from what the signed manifest says about it."""


class BundleChangedError(HashMismatchError):
    """A file read lazily from a remote bundle does not match the manifest it was opened
    with, and the server now publishes another manifest: the bundle changed on the
    server mid-session. Nothing of the new version was served; reopen (reload) to read it."""


class MissingFileError(BundleError):
    """A file listed in the manifest does not exist."""


class UnlistedFileError(BundleError):
    """A file exists in the bundle that the manifest does not list."""


class ExpiredError(BundleError):
    """The manifest carries `expires` and that time has passed (a frozen mirror)."""


class RollbackError(BundleError):
    """The version is lower than the highest already accepted for this library and these
    keys, or the same version with different bytes."""


class LibraryMismatchError(BundleError):
    """The bundle is validly signed, but for another library than the one asked for."""


class DownloadError(BundleError):
    """A remote file was larger than listed, too slow, stalled or unreachable."""


class SkillsError(HandbookError):
    """The docs cannot all be written as Agent Skills: two map to one skill name, a
    summary does not fit a skill's description, or an attached file's path is unsafe."""
