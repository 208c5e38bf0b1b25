"""`handbook pack`: a bundle as one deterministic ``.tar.gz``.

The same bundle always gives the same bytes, so an archive's sha256 can be published
and checked like the bundle's own hashes: ``manifest.json`` first (so that readers can
check every later entry against its listing before reading it, `handbook.bundle.archive`),
then the other entries sorted by name with folders before their files, every time set
to the bundle's `built_at`, owner 0/0 without names, modes 0644 and 0755, PAX headers
only where a name needs one (`handbook.bundle.tarstream`, the one tar subset that is written
and read), and a gzip header without a name or time. The bundle is verified before it
is packed, and the archive is written to a temporary file and renamed into place.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from handbook.bundle.archive import check_caps
from handbook.bundle.layout import MANIFEST
from handbook.bundle.local import Bundle, open_bundle
from handbook.bundle.manifest import utc_seconds
from handbook.bundle.tarstream import TarWriter

from ..errors import PublishError


def pack(
    bundle_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    keys: tuple[str, ...] = (),
    allow_unsigned: bool = True,
) -> Bundle:
    """Verify the bundle at `bundle_path` and write it to the archive `out`. Raises
    `BundleError` for a bundle that does not verify, `PublishError` when `out` cannot be
    written."""
    bundle = open_bundle(bundle_path, keys, allow_unsigned=allow_unsigned, hash_all=True)
    signed = bundle.manifest.signed
    files = bundle.listing()  # the listed files and the content the catalog refers to
    target = Path(out)
    check_caps(files, os.fspath(target))
    mtime = utc_seconds(signed.built_at) or 0  # a verified manifest's built_at always exists
    folders = {
        "/".join(name.split("/")[:depth])
        for name in files
        for depth in range(1, name.count("/") + 1)
    }
    rest = sorted([*folders, *files], key=lambda n: (n.split("/"), n not in folders))
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
        ):
            tar = TarWriter(gz, mtime)
            for name in [MANIFEST, *rest]:
                if name in folders:
                    tar.add_folder(name)
                else:
                    tar.add_file(name, bundle.read(name))
            tar.close()
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PublishError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return bundle
