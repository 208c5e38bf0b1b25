"""The one exception tree of the build side, rooted in the runtime's.

::

    HandbookError               (handbook.errors) every error Handbook raises on purpose
    └── HandbookBuildError      every error the build side raises on purpose
        ├── ConfigError         the `handbook` entry of mkdocs.yml cannot be used
        ├── FrontmatterError    a doc's frontmatter cannot be read (becomes findings)
        ├── ScaffoldError       `init` cannot start that library (folder, name, install)
        ├── BuildError          the library has errors (or warnings under strict)
        ├── UnsignedError       a signed build is required and there is no key
        ├── PublishError        the output location cannot take the bundle, archive or export
        ├── EmbeddingError      `semantic: true`, but no embedding model can run here
        ├── ReleaseError        a release precondition or step failed
        └── AcceptError         an inbox record cannot be accepted as it stands

Nothing here knows about exit codes: the CLI (`commands.py`) maps these, and the
runtime's `KeyFormatError` and `BundleError`, to exit 2 (a usage error: configuration,
key, folder, name) or 1 (findings and refusals), and the MkDocs plugin turns them into
one `PluginError`. Each message says what was observed and what to do.
"""

from __future__ import annotations

from handbook.errors import HandbookError

from .findings import Finding, count


class HandbookBuildError(HandbookError):
    """Base class of every error the build side raises on purpose."""


class ConfigError(HandbookBuildError):
    """The configuration cannot be used; `findings` says where and why."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = sorted(findings)
        super().__init__("\n".join(str(f) for f in self.findings))


class FrontmatterError(HandbookBuildError):
    """The frontmatter cannot be used; `findings` says why, with lines. `parse` turns it
    into the doc's findings, so it never reaches a command."""

    def __init__(self, *findings: Finding) -> None:
        super().__init__("\n".join(map(str, findings)))
        self.findings = list(findings)


class ScaffoldError(HandbookBuildError):
    """The folder cannot take a new library (a file would be overwritten, a bad name), or
    there is no pip requirement to install Handbook with in its workflow."""


class BuildError(HandbookBuildError):
    """The library has errors (or warnings under strict): nothing was written. `findings`
    are the check's, `docs` how many docs it checked."""

    def __init__(self, findings: list[Finding], docs: int) -> None:
        self.findings, self.docs = findings, docs
        self.errors, self.warnings = count(findings)
        super().__init__(f"{self.errors} errors, {self.warnings} warnings: nothing written")


class UnsignedError(HandbookBuildError):
    """A signed bundle is required (--strict, $CI) and no signing key was given."""


class PublishError(HandbookBuildError):
    """The output location cannot take a bundle, an archive or an export (it holds
    something else, or cannot be written)."""


class EmbeddingError(HandbookBuildError):
    """The configuration asks for vectors (`semantic: true`) and the `semantic` extra or
    its model is not installed; nothing is written."""


class ReleaseError(HandbookBuildError):
    """A release precondition failed or a step did; nothing changed. The message says
    what to do."""


class AcceptError(HandbookBuildError):
    """An inbox record cannot be accepted as it stands: its doc is gone or changed since
    the agent read it, its section is gone, or a new doc has no free place. Nothing was
    written; the message says what to do (reject the record, or pass another --path)."""
