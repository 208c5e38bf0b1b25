"""The blocks of a page whose text is made while the site renders, found in its markdown,
and the markdown that stands in for them in agent text.

Three kinds of block make text that is in no file: mkdocstrings' `::: identifier`
(signatures and docstrings, collected from the sources), mkautodoc's `::: identifier`
with its `:docstring:` lines, and markdown-exec's fences marked `exec="on"` (the output
of the code they hold). People read what the site rendered for them; agents read that
HTML converted to markdown (`to_markdown`), spliced in where the block was
(`splice`). Finding the blocks is textual, the way the extensions find them: a `:::`
line outside fences with the indented lines under it; a fence whose opening line asks
for `exec`.

Nothing here imports MkDocs: `rendering` drives the site's machinery and hands the HTML
over.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .origins import Run, source_line

AUTODOC = "autodoc"
"""mkdocstrings' `::: identifier` (and mkautodoc's, which has the same shape)."""
EXEC = "exec"
"""markdown-exec's `exec="on"` fences."""


@dataclass(frozen=True)
class Kinds:
    """The render-time blocks a site's configuration makes, and what makes them."""

    autodoc: str = ""
    """What renders `:::` blocks (`mkdocstrings`, `mkautodoc`), or "" when nothing does."""
    exec_languages: frozenset[str] = frozenset()
    """The fence languages markdown-exec runs (its custom fences' names)."""

    def __bool__(self) -> bool:
        return bool(self.autodoc or self.exec_languages)


class Block(NamedTuple):
    start: int
    """Its first line (0-based)."""
    end: int
    """The line after its last."""
    kind: str
    indent: str
    """The whitespace its lines share: taken off to render it, put back on its text."""

    def text(self, lines: Sequence[str]) -> str:
        return "\n".join(line[len(self.indent) :] for line in lines[self.start : self.end])


_AUTODOC = re.compile(r"^(?P<indent>[ \t]*)(?:#{1,6} *)?::: ?(?P<name>\S.*?) *$")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<mark>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
_EXEC = re.compile(r"""\bexec\s*=\s*["']?(?P<value>[^"'\s}]*)""")
_LANG = re.compile(r"^\{?\s*\.?(?P<lang>[\w+#.-]+)")


def plugin_entries(value: object) -> dict[str, Any]:
    """Plugin name -> its options, from MkDocs' `plugins` (a list or a mapping)."""
    items: list[tuple[object, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        for item in value:
            items += list(item.items()) if isinstance(item, dict) else [(item, {})]
    return {name: options or {} for name, options in items if isinstance(name, str)}


def extension_entries(value: object) -> list[tuple[str, Any]]:
    """(name, options) of MkDocs' `markdown_extensions` (a list or a mapping)."""
    items = (
        list(value.items()) if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    out = []
    for item in items:
        name, options = (
            next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, {})
        )
        if isinstance(name, str):
            out.append((name, options or {}))
    return out


def kinds_of(plugins: Iterable[str], extensions: Mapping[str, Any]) -> Kinds:
    """The render-time blocks of a configuration: mkdocstrings among its plugins,
    mkautodoc among its extensions, superfences' custom fences that markdown-exec formats
    (by the name of the formatter: a function, or the string a tag or TOML gives)."""
    autodoc = "mkdocstrings" if "mkdocstrings" in plugins else ""
    autodoc = autodoc or ("mkautodoc" if "mkautodoc" in extensions else "")
    superfences = extensions.get("pymdownx.superfences")
    fences = superfences.get("custom_fences") if isinstance(superfences, dict) else None
    languages = {
        str(fence.get("name", "")).lower()
        for fence in (fences if isinstance(fences, list) else [])
        if isinstance(fence, dict) and _by_markdown_exec(fence.get("format"))
    }
    return Kinds(autodoc, frozenset(languages - {""}))


def _by_markdown_exec(formatter: object) -> bool:
    if callable(formatter):
        return str(getattr(formatter, "__module__", "")).startswith("markdown_exec")
    return "markdown_exec" in repr(formatter)


def signature(pattern: str, settings: Mapping[str, Any], plugin: str) -> re.Pattern[str]:
    """`pattern` for the lines `plugin` changes, with `{open}` its opening tag as the
    configuration sets it (mkdocs-include-markdown's `opening_tag`, by default `{%`)."""
    options = plugin_entries(settings.get("plugins")).get(plugin)
    opening = options.get("opening_tag", "{%") if isinstance(options, dict) else "{%"
    return re.compile(pattern.replace("{open}", re.escape(str(opening))))


def find(lines: Sequence[str], kinds: Kinds) -> list[Block]:
    """The render-time blocks among `lines`, in order. A `:::` line inside a fence is an
    example, not a block; an exec fence's lines are its block, fences included."""
    blocks = []
    n = 0
    while n < len(lines):
        fence = _FENCE.match(lines[n])
        if fence:
            end = _fence_end(lines, n, fence)
            if _executes(fence["info"], kinds):
                blocks.append(Block(n, end, EXEC, fence["indent"]))
            n = end
            continue
        autodoc = _AUTODOC.match(lines[n]) if kinds.autodoc else None
        if autodoc:
            indent = autodoc["indent"]
            end = n + 1
            while end < len(lines) and _options_line(lines[end], indent):
                end += 1
            blocks.append(Block(n, end, AUTODOC, indent))
            n = end
            continue
        n += 1
    return blocks


def _fence_end(lines: Sequence[str], start: int, fence: re.Match[str]) -> int:
    """The line after the fence that opens at `start` (the text's end if it never closes)."""
    mark = fence["mark"]
    closing = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
    for n in range(start + 1, len(lines)):
        if closing.match(lines[n]):
            return n + 1
    return len(lines)


def _executes(info: str, kinds: Kinds) -> bool:
    lang = _LANG.match(info)
    found = _EXEC.search(info)
    if lang is None or lang["lang"].lower() not in kinds.exec_languages or found is None:
        return False
    return found["value"].lower() not in {"", "no", "off", "false", "0"}


def _options_line(line: str, indent: str) -> bool:
    """A line of a `:::` block's options: not blank, indented more than the `:::`."""
    return (
        bool(line.strip())
        and line.startswith(indent)
        and line[len(indent) : len(indent) + 1] in " \t"
    )


def names(block: Block, lines: Sequence[str]) -> str:
    """The block's first line, as a finding quotes it."""
    return lines[block.start].strip()


def to_markdown(html: str) -> str:
    """The rendered HTML of a block as markdown: headings as `#`, code as fences. What is
    not text is left out: the permalinks the toc extension adds to headings, and the
    line numbers beside highlighted code (their table would squash the code in a cell)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for link in soup.select("a.headerlink"):
        link.decompose()
    for table in soup.select("table.highlighttable"):
        code = table.select_one("td.code")
        if code is not None:
            table.replace_with(*code.contents)
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", str(text)).strip("\n")


class Spliced(NamedTuple):
    lines: list[str]
    origin: list[tuple[int, bool]]
    """For each line: the line of the text it came from, and whether it stands in for a
    block (then it is the block's first line)."""


def splice(lines: Sequence[str], made: Sequence[tuple[Block, str]]) -> Spliced:
    """`lines` with each block replaced by its markdown (re-indented as the block was)."""
    out: list[str] = []
    origin: list[tuple[int, bool]] = []
    n = 0
    for block, text in made:
        out += lines[n : block.start]
        origin += [(i, False) for i in range(n, block.start)]
        new = [f"{block.indent}{line}" if line else "" for line in text.split("\n")]
        out += new
        origin += [(block.start, True)] * len(new)
        n = block.end
    out += lines[n:]
    origin += [(i, False) for i in range(n, len(lines))]
    return Spliced(out, origin)


# -- line maps ---------------------------------------------------------------------------------


def per_line(runs: Sequence[Run], count: int) -> list[tuple[int, bool]]:
    """Each of `count` lines' source line and whether it is brought in, from `runs`."""
    return [source_line(runs, n) for n in range(count)]


def compose(
    outer: Sequence[tuple[int, bool]], inner: Sequence[tuple[int, bool]]
) -> list[tuple[int, bool]]:
    """`outer` maps lines of a text to lines of a middle text, `inner` those to the lines
    as written: together, the text's lines to the lines as written."""
    out = []
    for line, brought in outer:
        source, inner_brought = inner[min(line, len(inner) - 1)] if inner else (line, False)
        out.append((source, brought or inner_brought))
    return out


def diff_map(before: Sequence[str], after: Sequence[str]) -> list[tuple[int, bool]]:
    """Each line of `after` (a page's markdown after the plugins ran) mapped to `before`
    (as written): lines kept are themselves; lines a plugin made are at the first line
    it replaced (an include line), or the line before what it inserted."""
    out: list[tuple[int, bool]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [(i1 + k, False) for k in range(j2 - j1)]
        else:
            at = i1 if tag == "replace" else max(i1 - 1, 0)
            out += [(min(at, max(len(before) - 1, 0)), True)] * (j2 - j1)
    return out


def runs_of(lines: Sequence[tuple[int, bool]], written: int) -> tuple[Run, ...]:
    """The runs of a per-line map; () when every line is the one written there."""
    if len(lines) == written and all(s == n and not b for n, (s, b) in enumerate(lines)):
        return ()
    return tuple(_runs(lines))


def _runs(lines: Sequence[tuple[int, bool]]) -> Iterator[Run]:
    last: Run | None = None
    for n, (source, brought) in enumerate(lines):
        if last is not None and last.included == brought:
            expected = last.source if brought else last.source + n - last.start
            if source == expected:
                continue
        last = Run(n, source, brought)
        yield last
