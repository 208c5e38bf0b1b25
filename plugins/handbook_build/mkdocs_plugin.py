"""The MkDocs plugin `handbook`: `mkdocs build` gives the site and the bundle at once.

The only module that imports MkDocs, and a thin adapter: it runs the same
`pipeline.build` as `handbook build` (same findings, byte-identical bundle) and then
decorates the pages from the verified catalog of what it just built. ProperDocs, the
maintained fork of MkDocs 1.6, loads it from the same `mkdocs.plugins` entry point (it
aliases `mkdocs.*` imports to its own modules).

Events, in MkDocs' order:

- ``on_config``: the `handbook` entry is validated again by `config.load_config`, which
  knows the line of every key (MkDocs' schema below only checks types); the card CSS
  is added to ``extra_css``.
- ``on_files``: check, emit, sign and publish the bundle to ``bundle_dir``. Findings
  go to MkDocs' log as `path:line:col: CODE message`; any error aborts the build, and
  under ``--strict`` so does any warning (MkDocs counts them). The catalog page, the
  CSS, the bundle's ``llms.txt`` and ``llms-full.txt`` (every doc's body, made from the
  bundle for the site only) join the site's files at its root.
- ``on_page_read_source``: every page reaches MkDocs with its frontmatter HTML-escaped,
  since MkDocs and Material print a page's title and metadata as they are, into
  `<title>`, the nav, meta tags and the search index. A doc's page is made from its
  fields in the bundle and its body as Handbook splits it off the file, so MkDocs never
  reads a doc's frontmatter its own way: it takes a block that ends the file without a
  line break for body text, raw HTML and all. The body is the one written, not the
  bundle's: the site's include extensions expand it for the page as they expanded it
  for the bundle, and expanding the bundle's text again would add `auto_append` twice
  and expand the includes a doc shows escaped. (MkDocs 1.6 prefers setting ``content_string``
  in ``on_files``; that forgets the source path other plugins read, git dates for one.)
- ``on_page_markdown``: a doc page opens with its header card.
- ``on_post_build``: the bundle is copied to ``<site_dir>/bundle/`` (as files, not as
  pages: its content files are markdown that MkDocs must not render).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.utils.meta import get_data

from handbook.bundle.catalog import DocEntry
from handbook.bundle.layout import LLMS
from handbook.bundle.local import Bundle
from handbook.bundle.signing import SIGNING_KEY_ENV
from handbook.errors import HandbookError

from . import pipeline
from .config.keys import replaces_signed, signing_key
from .config.options import DEFAULT_BUNDLE_DIR, OPTIONS, Option
from .config.settings import Config, load_config
from .errors import BuildError, ConfigError
from .findings import Finding, Severity
from .pipeline import BuildResult
from .read.parse import written_body
from .read.source import Text
from .write import pages, seal
from .write.bundles import bundle_folders
from .write.llms import LLMS_FULL, llms_full_txt
from .write.pedigree_view import bundle_pedigrees, horizon_days
from .write.review_page import QUEUE_PAGE, QUEUE_URLS, queue_markdown

log = logging.getLogger("mkdocs.plugins.handbook")

SITE_BUNDLE = "bundle"


def _config_option(option: Option) -> base.BaseConfigOption[Any]:
    """MkDocs' declaration of an option: its YAML type and default, nothing more."""
    if option.default is None:
        return c.Optional(c.Type(option.type))
    return c.Type(option.type, default=option.default)


class HandbookConfig(base.Config):
    """The keys of the `handbook` entry, declared from `options.OPTIONS`. Types only:
    `config.load_config` checks values and reports them at their line and column."""

    # MkDocs collects a config class's options into `_schema`; these come from a table.
    _schema = tuple((option.name, _config_option(option)) for option in OPTIONS)


class HandbookPlugin(BasePlugin[HandbookConfig]):
    supports_properdocs = True  # ProperDocs asks plugins to declare it

    def __init__(self) -> None:
        self.settings: Config | None = None
        self.bundle: Bundle | None = None
        self.pedigrees: dict[str, dict[str, Any]] = {}
        self.docs: dict[str, DocEntry] = {}
        self.previous: dict[Path, Path | None] = {}
        """Each bundle folder -> the version it pointed at before this build."""

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        try:
            self.settings = load_config(config.config_file_path)
        except ConfigError as exc:
            for found in exc.findings:
                log.error(str(found))
            raise PluginError(
                f"handbook: the configuration has {len(exc.findings)} problem(s); nothing built"
            ) from None
        if pages.CSS_PATH not in config.extra_css:
            config.extra_css.append(pages.CSS_PATH)
        return config

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        settings = self._settings()
        out = settings.bundle_dir or Path(DEFAULT_BUNDLE_DIR)
        try:
            self.previous = seal.published(bundle_folders(settings, out).values())
        except HandbookError as exc:  # a bundle folder reached through a symbolic link
            raise PluginError(f"handbook: {exc}") from None
        made = _build(settings, out, bool(config.strict))
        if made is None:  # content errors on a site that is not strict: the site as before
            return files
        built, signed_with, replacing = made
        _log_findings(built.findings, loud=settings.strict_warnings)
        # The site is one audience's: the others' pages go, and everything generated for
        # people (cards, catalog, queue, llms.txt) comes from that audience's bundle.
        site = built.bundle
        if settings.audiences is not None:
            site = built.for_audience(settings.audiences.site)
            _withhold(files, built, site)
        self.bundle = site
        self.pedigrees = bundle_pedigrees(site)
        self.docs = pages.by_source(site.catalog.docs)
        signed = built.bundle.manifest.signed
        log.info(
            f"handbook: bundle {signed.library} {signed.version} with {signed.docs} docs "
            f"published to {os.path.relpath(out)} ({built.bundle.signature_state}"
            f"{', key from ' + signed_with if signed_with else ''})"
        )
        if signed_with is None and replacing is None:
            log.info(
                f"handbook: the bundle is unsigned; "
                f"set ${SIGNING_KEY_ENV} or handbook.signing_key to sign it"
            )
        _add_generated(files, config, site, settings, self.pedigrees)
        return files

    def on_page_read_source(self, *, page: Page, config: MkDocsConfig) -> str:
        doc = self.docs.get(page.file.src_uri)
        if doc is not None and self.bundle is not None:
            meta = pages.frontmatter(doc)
            adopted = self._settings().adopt is not None
            markdown = written_body(Text(doc.source, page.file.content_string), adopted)
            if markdown is None:  # the file changed since the build
                markdown = self.bundle.read(doc.content).decode("utf-8")
        else:  # not a doc (excluded, generated): as MkDocs reads it
            markdown, meta = get_data(page.file.content_string)
        return pages.page_source(pages.escaped(meta), markdown)

    def on_page_markdown(
        self, markdown: str, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str:
        doc = self.docs.get(page.file.src_uri)
        if doc is None or self.bundle is None:
            return markdown
        card = pages.header_card(
            doc,
            self.bundle.catalog.library,
            pages.raw_url(doc, page.url),
            self.pedigrees.get(doc.source),
        )
        return pages.insert_card(markdown, card)

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if self.bundle is None:
            return
        site = Path(config.site_dir)
        target = site / SITE_BUNDLE
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        shutil.copytree(self.bundle.path, target)  # the published version folder, real files

    def on_build_error(self, *, error: Exception) -> None:
        """A later plugin, the theme or `--strict` failed the build after `on_files`
        published the bundle: point `bundle_dir` back at the version it had, so a failed
        build publishes nothing."""
        if self.bundle is not None:
            seal.roll_back(self.previous)
            log.info("handbook: the build failed; the bundle published before it is restored")
            self.bundle = None

    def _settings(self) -> Config:
        if self.settings is None:  # on_config always runs first; this keeps mypy and readers sure
            raise PluginError("handbook: the plugin was not configured")
        return self.settings


def _build(
    settings: Config, out: Path, strict: bool
) -> tuple[BuildResult, str | None, str | None] | None:
    """`pipeline.build`, with the signing key the settings give; returns the result, where
    the key came from (None: unsigned) and the warning about replacing a signed bundle
    with an unsigned one. Every failure is one `PluginError`, its findings logged; a site
    that is not strict (`strict: false`, an adopted site) has its content errors logged
    at info level and gets None: the site builds, no bundle is published."""
    try:
        key, source, warning = signing_key(settings)
        if warning:
            log.warning(f"handbook: {warning}")
        if key is None and settings.signing_required and (strict or os.environ.get("CI")):
            raise PluginError(
                f"handbook: no signing key; set ${SIGNING_KEY_ENV} or handbook.signing_key "
                "(unsigned builds are refused under --strict and in CI; `signing: optional` "
                "allows them)"
            )
        replacing = replaces_signed(out) if key is None else None
        if replacing:
            log.warning(f"handbook: {replacing}")
        built = pipeline.build(settings, out, key, strict=strict and settings.strict_warnings)
    except BuildError as exc:
        _log_findings(exc.findings, loud=settings.strict_warnings)
        counted = f"{exc.errors} error(s), {exc.warnings} warning(s) in {exc.docs} docs"
        if settings.strict_warnings:
            raise PluginError(f"handbook: {counted}; nothing built") from None
        log.info(f"handbook: {counted}; no bundle published (`handbook check` lists them)")
        return None
    except (HandbookError, OSError) as exc:  # a bad key, an occupied output, a bundle refused
        raise PluginError(f"handbook: {exc}") from None
    return built, source if key is not None else None, replacing


def _withhold(files: Files, built: BuildResult, site: Bundle) -> None:
    """Take out of the site the pages of docs that some audience's bundle holds but the
    site's audience's (`site`) does not; pages that are no doc stay."""
    shown = {doc.source for doc in site.catalog.docs}
    for page in list(files.documentation_pages()):
        withheld = any(
            page.src_uri in {d.source for d in b.catalog.docs} for b in built.bundles.values()
        )
        if withheld and page.src_uri not in shown:
            files.remove(page)


def _add_generated(
    files: Files,
    config: MkDocsConfig,
    bundle: Bundle,
    settings: Config,
    pedigrees: dict[str, dict[str, Any]],
) -> None:
    """The card CSS, the catalog page, for a library with reviewers the review-queue page
    and, unless the site has its own, `llms.txt` and `llms-full.txt` at the site's root.
    A site with an explicit `nav` keeps it: the catalog and queue pages are built but
    not added to the nav, and MkDocs does not report them. `pedigrees`: the docs' as of
    the build, by source path ({} without reviewers)."""
    files.append(File.generated(config, pages.CSS_PATH, content=pages.CSS))
    owner = _llms_owner(files, config)
    if owner is None:
        files.append(File.generated(config, LLMS, content=bundle.read(LLMS)))
        files.append(File.generated(config, LLMS_FULL, content=llms_full_txt(bundle, settings)))
        log.info(f"handbook: wrote /{LLMS} and /{LLMS_FULL} (Handbook's; also /bundle/{LLMS})")
    else:
        log.info(f"handbook: /{LLMS} is {owner}; Handbook's is /bundle/{LLMS}, and it adds none")
    inclusion = InclusionLevel.NOT_IN_NAV if config.nav else InclusionLevel.UNDEFINED
    catalog = bundle.catalog
    has_catalog = files.get_file_from_path(pages.CATALOG_PAGE) is None
    queue = None
    if pedigrees and not any(files.get_file_from_path(url) for url in QUEUE_URLS):
        queue = QUEUE_PAGE
        content = queue_markdown(
            catalog.library,
            catalog.docs,
            pedigrees,
            horizon_days(bundle),
            pages.CATALOG_PAGE if has_catalog else None,
        )
        files.append(File.generated(config, queue, content=content, inclusion=inclusion))
    elif pedigrees:
        log.info(f"handbook: the site has its own /{QUEUE_PAGE}; Handbook adds no review queue")
    if has_catalog:
        content = pages.catalog_markdown(catalog.library, catalog.docs, pedigrees, queue)
        files.append(
            File.generated(config, pages.CATALOG_PAGE, content=content, inclusion=inclusion)
        )


def _llms_owner(files: Files, config: MkDocsConfig) -> str | None:
    """Who makes the site's `llms.txt` (or `llms-full.txt`) besides Handbook: the site's
    own file, or another plugin (mkdocs-llmstxt writes its own after the build); None
    when nobody does."""
    for name in (LLMS, LLMS_FULL):
        if files.get_file_from_path(name) is not None:
            return f"the site's own ({config.docs_dir}/{name})"
    for name in config.plugins:
        if name != "handbook" and "llms" in name.replace("-", "").replace("_", "").lower():
            return f"the {name} plugin's"
    return None


def _log_findings(findings: list[Finding], *, loud: bool) -> None:
    """Each finding as `handbook check` prints it. Notices (what adoption derived) are
    debug lines and one count: an adopted site has one per field of every page, and
    they never fail a build. Errors and warnings are logged at MkDocs' matching level
    when the site is strict (`loud`); otherwise each is a debug line and one info line
    counts them, so `mkdocs build --strict`, which counts warnings, is not failed by the
    content as it stands."""
    levels = {"error": log.error, "warn": log.warning}
    quiet: dict[Severity, int] = {}
    for found in findings:
        if found.severity == "notice" or not loud:
            quiet[found.severity] = quiet.get(found.severity, 0) + 1
            log.debug(str(found))
        else:
            levels.get(found.severity, log.info)(str(found))
    if quiet:
        counted = ", ".join(
            f"{quiet[severity]} {word}" + ("s" if quiet[severity] != 1 else "")
            for severity, word in zip(Severity, ("error", "warning", "notice"), strict=True)
            if severity in quiet
        )
        log.info(f"handbook: {counted} (`handbook check --explain` lists them)")


__all__ = ["HandbookConfig", "HandbookPlugin"]
