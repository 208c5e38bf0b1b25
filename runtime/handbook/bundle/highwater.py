"""The version high-water mark of remote bundles: the highest version accepted per
library and set of trusted keys, with the hash of its manifest, kept in a state file
outside any bundle folder (`state_dir/highwater.json`, written atomically; by default
under $HANDBOOK_STATE_DIR, else $XDG_STATE_HOME/handbook) so that it survives restarts.
`handbook.bundle.remote` consults it before any file is downloaded: lower is a rollback,
equal precedence with another manifest is one version claiming two bundles (`1.0.0+b2`
after `1.0.0`: build metadata makes no new version). A file or a mark it cannot read or
order refuses, never counts as no mark. Trusting other keys starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RollbackError
from .manifest import utc_time
from .semver import Version
from .semver import parse as parse_version
from .signing import PublicKey


def default_state_dir() -> Path:
    base = os.environ.get("HANDBOOK_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "handbook"
    )
    return Path(base)


class HighWater:
    """The highest version accepted per (library, set of trusted keys), with the hash
    of its manifest, in `state_dir/highwater.json` (written atomically)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "highwater.json"

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RollbackError(
                f"{self.path}: the version high-water file is unreadable ({exc}); "
                "repair or remove it deliberately, knowing that removing it allows rollbacks"
            ) from None
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _key(library: str, keys: Sequence[PublicKey]) -> str:
        keyset = ",".join(sorted(k.keyid for k in keys)) or "unsigned"
        return f"{library}|{hashlib.sha256(keyset.encode()).hexdigest()[:32]}"

    def _mark(self, data: dict[str, Any], key: str) -> tuple[Version, str] | None:
        """The accepted version and manifest hash under `key`; a mark this reader cannot
        order is refused like an unreadable file, never taken as no mark."""
        mark = data.get(key)
        if not mark:
            return None
        try:
            return parse_version(mark["version"]), mark["manifest_sha256"]
        except (TypeError, KeyError, ValueError) as exc:
            raise RollbackError(
                f"{self.path}: the version high-water mark for {key.partition('|')[0]} is "
                f"unusable ({exc}); repair or remove it deliberately, knowing that removing "
                "it allows rollbacks"
            ) from None

    def check(self, library: str, keys: Sequence[PublicKey], version: Version, digest: str) -> None:
        """Refuse `version` below the mark, or equal to it (build metadata aside: one
        precedence, one version) with another manifest."""
        mark = self._mark(self._load(), self._key(library, keys))
        if mark is None:
            return
        accepted, accepted_digest = mark
        if version < accepted:
            raise RollbackError(
                f"{library} {version} is older than {accepted}, already accepted with these keys; "
                "refused as a rollback (allow_rollback to accept it on purpose)"
            )
        if version == accepted and digest != accepted_digest:
            alias = f" (as {accepted}: build metadata makes no new version)"
            raise RollbackError(
                f"{library} {version} was already accepted with other contents"
                f"{alias if str(version) != str(accepted) else ''}; "
                "one version must always be the same bundle"
            )

    def accept(
        self, library: str, keys: Sequence[PublicKey], version: Version, digest: str, source: str
    ) -> None:
        data = self._load()
        key = self._key(library, keys)
        mark = self._mark(data, key)
        if mark is not None and version < mark[0]:
            return  # an allowed rollback does not lower the mark
        data[key] = {
            "version": str(version),
            "manifest_sha256": digest,
            "source": source,
            "accepted_at": utc_time(time.time()),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}")
        try:
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a failed write leaves the old mark and no debris
            raise
