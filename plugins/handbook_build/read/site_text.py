"""A doc's body as the site makes it, for a site whose plugins or render-time extensions
change what people read: the plugins' markdown (`rendering`), then the include
extensions (`includes`), then the render-time blocks' text (`generated`), with every
line still traced to where it is written and every failure a finding.

A `Renderer` is an `Expander` to `parse`: the same body in, the same `Expansion` out.
It is made once per build in each process that parses docs (`prepare` in the main
process, which workers forked after it inherit; `renderer` elsewhere), because loading
a site's plugins costs far more than a page.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .. import rules
from ..findings import Finding
from . import generated
from .generated import Block
from .includes import _PRIVATE_KEY, Expander, Expansion
from .quiet import captured, said, within
from .rendering import Machinery, Site

SIGNATURES = {
    "include-markdown": r"^\s*{open}-?\s*include(-markdown)?\b",
    "macros": r"\{\{.*?\}\}|\{%.*?%\}",
}
"""What the lines look like that a plugin which is not installed would have changed:
they stay as written, and each is reported."""


class Renderer:
    """The site's plugins and render-time extensions, loaded, ready for pages."""

    def __init__(self, site: Site, expander: Expander) -> None:
        self.site, self.expander = site, expander
        self.findings: list[Finding] = []
        """About the configuration: what is left out, and why."""
        self.machinery: Machinery | None = None
        with within(site.path.parent), captured():
            try:
                self.machinery = Machinery(site, self.findings)
            except Exception as exc:  # any plugin's on_config may raise anything
                line, col = site.at("plugins")
                self.findings.append(
                    rules.RENDER_FAILED.at(site.shown, line, col, variant="setup", error=said(exc))
                )
        self.kinds = self.machinery.kinds if self.machinery else site.kinds
        missing = site.plugins if self.machinery is None else self.machinery.missing
        self.why = (
            "did not load with the site's configuration (see its finding)"
            if self.machinery is None
            else "is not installed here; install it where Handbook runs"
        )
        self.signatures = {
            name: generated.signature(pattern, site.settings, name)
            for name, pattern in SIGNATURES.items()
            if name in missing
        }

    @property
    def max_chars(self) -> int:
        return self.expander.max_chars

    def expand(self, path: str, body: str, body_line: int) -> Expansion:
        """`body`, whose first line is line `body_line` of the file `path`, as the site
        makes it."""
        written = body.split("\n")
        findings = [*self._unavailable(path, body_line, written)]
        made, plugged = self._plugged(path, body, body_line, findings)
        expansion = self.expander.expand(path, made, body_line)
        findings += [_moved(f, plugged, body_line) for f in expansion.findings]
        lines = expansion.body.split("\n")
        included = generated.compose(generated.per_line(expansion.runs, len(lines)), plugged)
        texts = []
        for block in generated.find(lines, self.kinds):
            text, error = self._render(block, lines)
            if error:
                line = included[block.start][0]
                quoted = generated.names(block, lines)
                findings.append(self._at(path, body_line + line, block.kind, error, quoted))
            else:
                texts.append((block, text))
        spliced = generated.splice(lines, texts)
        text = "\n".join(spliced.lines)
        refused = self._refused(path, body_line, body, text)
        if refused is not None:
            return Expansion(body, (), (*findings, refused))
        origin = generated.compose(spliced.origin, included)
        return Expansion(text, generated.runs_of(origin, len(written)), tuple(findings))

    def _plugged(
        self, path: str, body: str, body_line: int, findings: list[Finding]
    ) -> tuple[str, list[tuple[int, bool]]]:
        """The body after the plugins' page events, and its lines traced to `body`'s."""
        same = [(n, False) for n in range(body.count("\n") + 1)]
        if self.machinery is None:
            return body, same
        with within(self.site.path.parent), captured():
            made, error = self.machinery.page_markdown(path, body)
        if error:
            findings.append(self._at(path, body_line, "raised", error, ""))
            return body, same
        if made == body:
            return body, same
        return made, generated.diff_map(body.split("\n"), made.split("\n"))

    def _render(self, block: Block, lines: list[str]) -> tuple[str, str]:
        """The block's text as markdown, and ""; or "" and why it cannot be had."""
        if self.machinery is None:
            return "", "the site's configuration does not load (see its finding)"
        with within(self.site.path.parent), captured() as logged:
            html, error = self.machinery.render(block.text(lines))
        failures = logged.failures("markdown_exec" if block.kind == generated.EXEC else "")
        if error or failures:
            return "", error or failures[0]
        return generated.to_markdown(html), ""

    def _unavailable(self, path: str, body_line: int, written: list[str]) -> list[Finding]:
        """The lines a plugin that cannot run would have changed."""
        return [
            rules.RENDER_FAILED.at(
                path,
                body_line + n,
                1,
                variant="unavailable",
                plugin=name,
                why=self.why,
                text=_short(line.strip()),
            )
            for name, pattern in self.signatures.items()
            for n, line in enumerate(written)
            if pattern.search(line)
        ]

    def _at(self, path: str, line: int, variant: str, error: str, text: str) -> Finding:
        return rules.RENDER_FAILED.at(
            path, line, 1, variant=variant, error=error, text=_short(text)
        )

    def _refused(self, path: str, body_line: int, body: str, text: str) -> Finding | None:
        """Why the made text cannot be kept: far over the limit, or a private key that
        something brought in (the bundle is published)."""
        if len(text) > self.max_chars:
            return rules.RENDER_FAILED.at(
                path, body_line, variant="too_long", chars=len(text), limit=self.max_chars
            )
        if _PRIVATE_KEY.search(text) and not _PRIVATE_KEY.search(body):
            return rules.RENDER_FAILED.at(path, body_line, variant="private_key")
        return None


def _moved(finding: Finding, plugged: list[tuple[int, bool]], body_line: int) -> Finding:
    """A finding about a line of the plugins' text, at the line as written."""
    n = finding.line - body_line
    if not 0 <= n < len(plugged) or plugged[n] == (n, False):
        return finding
    source, brought = plugged[n]
    return replace(finding, line=body_line + source, col=1 if brought else finding.col)


_SHOWN = 120


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


_current: dict[Path, Renderer] = {}


def renderer(site: Site, expander: Expander) -> Renderer:
    """This build's renderer for `site` in this process, made on first use."""
    found = _current.get(site.path)
    if found is None:
        found = _current[site.path] = Renderer(site, expander)
    found.expander = expander  # the include extensions' caches are per batch
    return found


def prepare(site: Site, expander: Expander) -> Renderer:
    """A fresh renderer for a new build: plugins keep state, and files change between
    builds (`mkdocs serve`), so nothing of the previous one is kept."""
    _current.clear()
    return renderer(site, expander)
