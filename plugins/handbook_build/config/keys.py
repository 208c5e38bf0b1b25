"""The key a build signs with: where it comes from, and where it must never be.

`--key FILE`, else ``$HANDBOOK_SIGNING_KEY`` (the key's contents, a CI secret, or the path
of a key file: PEM text starts with ``-----BEGIN``), else the configured ``signing_key``
file. A key file inside ``docs_dir`` or ``site_dir`` is
refused: MkDocs copies every file of the docs folder into the site, and the site is
published, so the key would be served to anyone. A key file that group or others may
read draws a warning, as ssh gives one.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.layout import MANIFEST
from handbook.bundle.signing import SIGNING_KEY_ENV, load_private_key
from handbook.errors import KeyFormatError

from .settings import Config


class SigningKey(NamedTuple):
    key: Ed25519PrivateKey | None
    """None when no key is given anywhere."""
    source: str
    """Where it came from, for messages ("" when there is none)."""
    warning: str | None = None
    """Something the person building should fix, though the build goes on."""


def signing_key(config: Config, key_file: str | os.PathLike[str] | None = None) -> SigningKey:
    """The key to sign with. Raises `KeyFormatError` naming the source of a key that
    cannot be used: unreadable, malformed, or inside the folders that are published."""
    if key_file is not None:
        what, path = str(key_file), Path(key_file)
    elif value := os.environ.get(SIGNING_KEY_ENV):
        if is_pem(value):
            what = f"${SIGNING_KEY_ENV}"
            return SigningKey(load_private_key(value, what=what), what)
        what, path = f"{value} (${SIGNING_KEY_ENV})", _env_path(value)
    elif config.signing_key is not None:
        what, path = f"{config.signing_key} (handbook.signing_key)", config.signing_key
    else:
        return SigningKey(None, "")
    _refuse_published(path, what, config)
    try:
        info = os.stat(path)
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFormatError(f"cannot read the signing key {what}: {exc.strerror or exc}") from None
    warning = None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        mode = stat.S_IMODE(info.st_mode)
        warning = (
            f"the signing key {what} may be read by group or others (mode {mode:o}); "
            f"make it private: chmod 600 {path}"
        )
    return SigningKey(load_private_key(data, what=what), what, warning)


def is_pem(value: str) -> bool:
    """Whether `value` is a key's PEM text rather than the path of a file holding one."""
    return value.lstrip().startswith("-----BEGIN")


def _env_path(value: str) -> Path:
    """The key file that $HANDBOOK_SIGNING_KEY names (a path, not PEM text), or
    KeyFormatError saying what the variable may hold. The value is shown only when it
    looks like a path: anything else may be a secret pasted in the wrong form."""
    name = value.strip()
    path = Path(os.path.expanduser(name))
    if "\n" not in name and path.is_file():
        return path
    pathlike = "\n" not in name and len(name) <= 300 and (os.sep in name or "." in name)
    which = f"no file {name!r} exists" if pathlike else "it is not PEM text nor a file's path"
    raise KeyFormatError(
        f"${SIGNING_KEY_ENV} holds neither a key's PEM text (starting -----BEGIN) nor the "
        f"path of a key file ({which}); set it to the contents of the file `handbook keygen` "
        "wrote, or to that file's path"
    )


def _refuse_published(path: Path, what: str, config: Config) -> None:
    real = Path(os.path.realpath(path))
    for name, folder in (("docs_dir", config.docs_dir), ("site_dir", config.site_dir)):
        root = Path(os.path.realpath(folder))
        if real == root or root in real.parents:
            raise KeyFormatError(
                f"the signing key {what} is inside {name} ({folder}), which is published with the "
                "site: anyone could read it. Move it out (beside mkdocs.yml, listed in .gitignore) "
                f"or pass it in ${SIGNING_KEY_ENV}, and make a new key if this one was ever published"
            )


def replaces_signed(out: Path) -> str | None:
    """What to tell someone about to publish an unsigned bundle at `out` over a signed
    one: readers that trust a key will refuse everything from then on. None when the
    bundle there is unsigned, or there is none."""
    try:
        signatures = json.loads((out / MANIFEST).read_bytes()).get("signatures")
    except (OSError, ValueError, AttributeError):
        return None
    if not signatures:
        return None
    return (
        f"the bundle at {out} is signed, and this build replaces it with an UNSIGNED one: "
        "readers that trust a key will refuse it. Sign it (--key, "
        f"${SIGNING_KEY_ENV} or handbook.signing_key); --strict refuses to build unsigned"
    )
