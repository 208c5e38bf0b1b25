"""The one exception tree of the runtime.

::

    HandbookError
    ├── KeyFormatError          a trusted or signing key is malformed or unsafe
    └── BundleError             a bundle that must not be served
        ├── FormatError         not a handbook/v1 bundle, or not strictly canonical
        ├── SignatureError      no valid signature by enough trusted keys
        ├── HashMismatchError   a file's size or sha256 differs from the manifest
        ├── MissingFileError    a file the manifest lists is absent
        └── UnlistedFileError   a file the manifest does not list is present

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


class MissingFileError(BundleError):
    """A file listed in the manifest does not exist."""


class UnlistedFileError(BundleError):
    """A file exists in the bundle that the manifest does not list."""
