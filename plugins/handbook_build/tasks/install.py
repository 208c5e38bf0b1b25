"""What the workflow that `handbook init` writes installs Handbook with.

The workflow runs `pip install "$HANDBOOK"` on every push, so the requirement must name
something a CI runner can fetch and that never changes under it: a git URL at a commit
or tag, a wheel URL, or a pinned version on an index the runner reaches. The user names
it with `init --install-from`; without that, it is the commit this Handbook runs from,
when its code lives in a git checkout and that commit is on one of the checkout's
remotes. Otherwise `init` refuses rather than write a workflow that fails on first push;
so it does for a local path (`.`, `/abs/path`, `git+file://…`, a checkout whose remote
is a folder), which no runner has.

The requirement is written into YAML and read by a shell step, so it is held to
characters neither can misread, and credentials in a remote URL never reach it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import handbook

from ..errors import ScaffoldError

HANDBOOK_CODE = Path(handbook.__file__).resolve().parent
"""Where the running Handbook was imported from: the checkout `init` looks at."""

ASK = (
    "pass --install-from SPEC, the pip requirement the workflow installs Handbook with "
    "(git+https://host/org/handbook@<commit or tag>, a wheel URL, or handbook==<version> "
    "from your index)"
)
_SPEC_CHARACTERS = "letters, digits and . _ ~ : / ? # @ + , = % -"
_SPEC = re.compile(r"[A-Za-z0-9._~:/?#@+,=%-]+")


def check_spec(spec: str) -> str:
    """`spec` when it is safe to write into the workflow, else ScaffoldError."""
    if not spec:
        raise ScaffoldError(f"--install-from is empty; {ASK}")
    if spec.startswith("-"):
        raise ScaffoldError(
            f"--install-from {spec!r} starts with '-', which pip would read as an option; {ASK}"
        )
    if not _SPEC.fullmatch(spec):
        bad = next(c for c in spec if not _SPEC.fullmatch(c))
        raise ScaffoldError(
            f"--install-from {spec!r}: {bad!r} cannot go into the workflow's YAML and shell "
            f"step as it is; a requirement here has only {_SPEC_CHARACTERS}"
        )
    if is_local(spec):
        raise ScaffoldError(
            f"the workflow would install Handbook from {spec!r}, a path on this machine that "
            f"no CI runner has; {ASK}"
        )
    return spec


def is_local(spec: str) -> bool:
    """Whether a pip requirement names something on this machine that a runner's checkout
    does not hold: a `file:` URL (`git+` or not), an absolute or home path, or a folder
    (`.`, `../handbook`). A relative path to an archive inside the repository
    (`./wheels/handbook-0.1.0-py3-none-any.whl`) is checked out with it, so it passes."""
    scheme, colon, _ = spec.partition(":")
    if colon and scheme.lower() in ("file", "git+file", "hg+file", "svn+file", "bzr+file"):
        return True
    if "://" in spec:
        return False
    if spec.startswith(("/", "~")) or ".." in spec.split("/"):
        return True
    archive = spec.endswith((".whl", ".tar.gz", ".zip"))
    return (spec.startswith(".") or "/" in spec) and not archive


def default_spec() -> str:
    """`git+<remote>@<commit>` for the checkout the running Handbook comes from."""
    return checkout_spec(HANDBOOK_CODE)


def checkout_spec(folder: Path) -> str:
    """`git+<remote>@<commit>` for the git checkout holding `folder`: its HEAD commit, at
    the first remote that has it (the branch's own, then `origin`, then the others).
    ScaffoldError when there is no checkout, no remote, or no remote with the commit."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    root = Path(top or folder)
    commit = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    # A package installed into a virtual environment inside some project's checkout is
    # in that checkout too, but not tracked by it: that project is not Handbook.
    if top is None or commit is None or not _git(root, "ls-files", "--", str(folder)):
        raise ScaffoldError(
            f"Handbook runs from {folder}, which is not committed in a git checkout; {ASK}"
        )
    remotes = (_git(root, "remote") or "").split()
    if not remotes:
        raise ScaffoldError(
            f"the Handbook checkout {root} has no git remote a CI runner could install from; {ASK}"
        )
    branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    tracked = _git(root, "config", f"branch.{branch}.remote") if branch else None
    for remote in sorted(remotes, key=lambda name: (name != tracked, name != "origin", name)):
        if _git(root, "for-each-ref", "--contains", commit, f"refs/remotes/{remote}/"):
            url = pip_url(_git(root, "remote", "get-url", remote) or "", root)
            return check_spec(f"git+{url}@{commit}")
    raise ScaffoldError(
        f"commit {commit[:12]} of the Handbook checkout {root} is on no branch of its "
        f"remotes ({', '.join(remotes)}) as far as this checkout knows; push it, or {ASK}"
    )


def pip_url(remote: str, root: Path) -> str:
    """A git remote URL as pip's `git+` requirements take it: git's scp-like
    `user@host:path` becomes `ssh://user@host/path` (as GitHub and GitLab read it), a
    local path a `file://` URL (resolved from the checkout `root`), and credentials are
    dropped: a password or an http(s) user never goes into a file that is committed."""
    if "://" not in remote:
        host, colon, path = remote.partition(":")
        if colon and host and "/" not in host:
            return f"ssh://{host}/{path.lstrip('/')}"
        return (root / remote).resolve().as_uri()
    parts = urlsplit(remote)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    if parts.port is not None:
        netloc += f":{parts.port}"
    if parts.username and parts.scheme not in ("http", "https"):
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit(parts._replace(netloc=netloc))


def _git(folder: Path, *args: str) -> str | None:
    """git's output, stripped, or None when git fails or is not installed."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None
