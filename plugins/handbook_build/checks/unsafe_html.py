"""HB403: script in a doc's body: `<script>` elements, inline event handlers (``on…=``)
and `javascript:`, `vbscript:` or `data:text/html` URLs, including those SVG's
animations put into a link and the `data:` documents `<use>` copies into the page; and
the elements that send the whole page elsewhere: `<base>`, which moves every relative
URL (the theme's own scripts too) to another host, and `<meta http-equiv>` (`refresh`
navigates away, other pragmas set cookies or the page's policy).

Raw HTML is markdown's normal power and the site keeps it, but a doc is also read by
people who did not write it: script in it runs on their page, under the site's origin.
So it is a finding, and a library that means it sets the rule to `warn` or `off`.

What is HTML and what is a link is decided by tokenizers, never by patterns over the
text (a quick look at the text only rules out bodies with nothing to find):
markdown-it-py's blocks and inline tokens (code blocks and code spans are text, whatever
they show), and the standard library's `html.parser` for the HTML in them. markdown-it
reads CommonMark; the site renders with Python-Markdown, which takes more for HTML, so
the whole raw text of a paragraph is given to the HTML tokenizer, not only the tags
CommonMark accepts (``\\<img onerror=…>`` is text to CommonMark and a tag to
Python-Markdown). URLs are judged as a browser reads them: entities decoded, tabs and
line breaks dropped, letter case ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from html.parser import HTMLParser
from typing import NamedTuple

from markdown.extensions.attr_list import get_attrs
from markdown_it import MarkdownIt, rules_inline
from markdown_it.parser_inline import RuleFuncInlineType
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from .. import rules
from ..findings import Finding
from ..read.parse import Doc

URL_ATTRIBUTES = frozenset(
    {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background"}
)
"""Attributes whose value a browser follows or loads as a URL."""
SCRIPT_SCHEMES = ("javascript", "vbscript")
ANIMATIONS = frozenset({"animate", "animatecolor", "animatemotion", "animatetransform", "set"})
"""SVG's animation elements: one whose `attributeName` is a URL attribute gives it the
values of its `to`, `from`, `by` and `values` (a `;` list) while it runs."""
_ANIMATED = ("to", "from", "by", "values")
_URL_IGNORED = str.maketrans("", "", "\t\n\r")
"""A browser drops these anywhere in a URL (`java&#9;script:` is `javascript:`)."""
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_HANDLER = re.compile(r"on[a-z]+")
"""The name of an event handler attribute (`onclick`; `on:click` of some template
languages is not one)."""
_HANDLER_SET = re.compile(r"on[a-z]+\s*=")
_NAME_FOLLOWS = frozenset("/\"'`{:")
"""Besides white space, what an attribute name may follow: a slash, a quote (html.parser),
a backtick (a code span blanked to spaces ends in one), `{` or `{:` (an attribute list)."""
_SCRIPT_SCHEME = re.compile(r"(?<![a-z0-9+.-])(?:javascript|vbscript|data):")
"""A scheme `unsafe_scheme` may find, where a URL can start (`metadata:` is no URL)."""
_ATTRIBUTE_LIST = re.compile(r"\{:?[ ]*([^}\n ][^}\n]*)\}")
"""An attribute list of Python-Markdown's `attr_list` (its own pattern, one list at a
time): `[x](y){: onclick=z }` gives the link an attribute, and so does a fence's
```` ```{.py onclick=z} ````."""
_SPAN = "hb_span"
"""The `Token.meta` key under which a positioned rule leaves (start, end) in its source."""


class Problem(NamedTuple):
    """One unsafe thing, at a 0-based line and column of the text it was found in."""

    line: int
    col: int
    variant: str
    fields: dict[str, str]


def check(doc: Doc) -> list[Finding]:
    """HB403 findings of the doc's frontmatter values and body, at their line and column
    in the file. A field's value reaches the theme too (Material's redirect template
    puts a page's `location` into a link and a script), so a script URL there is found
    like one in the body."""
    found = list(_field_problems(doc))
    if may_hold_script(doc.body):
        found += [
            rules.UNSAFE_HTML.at(
                doc.path, doc.body_line + line, col + 1, variant=problem.variant, **problem.fields
            )
            for line, col, problem in scan_body(doc.body)
        ]
    return found


def _field_problems(doc: Doc) -> Iterator[Finding]:
    for name, value in doc.meta.items():
        for item in value if isinstance(value, list) else [value]:
            scheme = unsafe_scheme(item) if isinstance(item, str) else None
            if scheme is not None:
                at = doc.value_at(name)
                yield rules.UNSAFE_HTML.at(
                    doc.path, at.line, at.col, variant="url", scheme=scheme, place=f"field `{name}`"
                )


def scan_body(body: str) -> list[tuple[int, int, Problem]]:
    """Each problem of a markdown body with the 0-based line and column it is written at."""
    lines, out = body.split("\n"), []
    env: dict[str, object] = {}
    for block in _md.parse(body, env):
        if block.map is None:
            continue
        text = block.content
        if block.type == "html_block":
            found = scan_html(text)
        elif block.type == "inline" and any(c in text for c in "<[{"):
            found = list(_inline_problems(text, env))
        elif block.type == "fence" and "{" in block.info:
            text, found = block.info, list(_attribute_lists(block.info))
        else:
            continue
        source = lines[block.map[0] : block.map[1]]
        for problem in found:
            line, col = _place(text, source, problem.line, problem.col)
            out.append((block.map[0] + line, col, problem))
    return out


def may_hold_script(body: str) -> bool:
    """False when the tokenizers below cannot find anything in `body`, decided from its
    text alone: reading a body's blocks and paragraphs costs as much as parsing it, and
    few bodies hold anything that could become script. Each test is a necessary
    condition of one finding, taken from the grammar that finds it: a `<script` tag
    (or a `srcdoc` document, where it hides behind entities), a handler's name set to
    a value where an attribute name may start (`_NAME_FOLLOWS`), and a URL whose
    scheme, once entities, backslash escapes, tabs and line breaks are gone, is
    `javascript:`, `vbscript:` or `data:`; and the names of the elements and attributes
    that send the page elsewhere (`<base`, `http-equiv`), which entities cannot write."""
    if not any(sign in body for sign in "<[{"):  # no HTML, no link, no attribute list
        return False
    lowered = (unescape(body) if "&" in body else body).lower()
    flat = lowered.replace("\t", "").replace("\n", "").replace("\r", "").replace("\\", "")
    return (
        "<script" in flat
        or "srcdoc" in flat
        or "<base" in lowered
        or "http-equiv" in lowered
        or (("script:" in flat or "data:" in flat) and _SCRIPT_SCHEME.search(flat) is not None)
        or any(
            (before := lowered[found.start() - 1]).isspace() or before in _NAME_FOLLOWS
            for found in _HANDLER_SET.finditer(lowered)
            if found.start()
        )
    )


def scan_html(html: str) -> list[Problem]:
    """The unsafe elements and attributes of an HTML fragment, as a browser would read
    them; each at its tag."""
    parser = _Tags()
    # Every tag ends with `>`, so nothing after the last one is a tag; and html.parser
    # (before CPython's 2025 fixes) rereads unterminated tags to the end of its input,
    # which makes a paragraph of 5,000 `<x ` take seconds instead of milliseconds.
    # It also raises on `<![word[`, which a browser reads as a comment up to the next
    # `>`: `<!?` is read the same way, and keeps every place where it was.
    parser.feed(html[: html.rfind(">") + 1].replace("<![", "<!?"))
    parser.close()
    return parser.found


def unsafe_scheme(url: str) -> str | None:
    """The scheme of a URL that runs script when followed (`javascript:`), or None."""
    scheme, colon, rest = _normal(url).partition(":")
    if not colon:
        return None
    if scheme in SCRIPT_SCHEMES:
        return f"{scheme}:"
    if scheme == "data" and rest.lstrip(" \f").startswith("text/html"):
        return "data:text/html"
    return None


def _loaded_scheme(url: str) -> str | None:
    """`unsafe_scheme`, and `data:` of any type: a URL that SVG copies into the page
    (`<use>`, or an animated `href` whose element is not known here) brings a document
    whose script runs in the page, whatever its media type."""
    if scheme := unsafe_scheme(url):
        return scheme
    return "data:" if _normal(url).startswith("data:") else None


def _normal(url: str) -> str:
    """`url` as a browser reads its scheme: outer control characters and spaces gone,
    tabs and line breaks dropped, letter case ignored."""
    return url.strip(_C0_AND_SPACE).translate(_URL_IGNORED).lower()


class _Tags(HTMLParser):
    """Collects the unsafe start tags of the HTML it is fed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Problem] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line, col = self.getpos()
        self.found += [Problem(line - 1, col, *found) for found in _element_problems(tag, attrs)]
        for name, value in attrs:
            if name == "srcdoc" and value:  # a document of its own, in the page's origin
                self.found += [p._replace(line=line - 1, col=col) for p in scan_html(value)]
            elif judged := _judged(name, value, f"on `<{tag}>`", f"of `<{tag}>`"):
                self.found.append(Problem(line - 1, col, *judged))


def _element_problems(
    tag: str, attrs: list[tuple[str, str | None]]
) -> Iterator[tuple[str, dict[str, str]]]:
    """The variant and fields of each problem that `tag` makes as a whole, or together
    with its attributes; `_judged` reads each attribute alone."""
    if tag in ("script", "base"):
        yield tag, {}
    elif tag == "meta" and any(name == "http-equiv" for name, _ in attrs):
        yield "pragma", {}
    elif tag == "use":
        for name, value in attrs:  # a script URL there is `_judged`'s
            if _is_href(name) and _loaded_scheme(value or "") == "data:":
                yield "url", {"scheme": "data:", "place": f"the `{name}` of `<use>`"}
    elif tag in ANIMATIONS and any(
        name == "attributename" and _is_url_attribute((value or "").strip().lower())
        for name, value in attrs
    ):
        for name, value in attrs:
            urls = (value or "").split(";") if name in _ANIMATED else []
            if scheme := next(filter(None, map(_loaded_scheme, urls)), None):
                yield "url", {"scheme": scheme, "place": f"the `{name}` of `<{tag}>`"}


def _is_url_attribute(name: str) -> bool:
    """Whether an animation's `attributeName` names a URL attribute (a prefix may name
    XLink's namespace: `xlink:href`, `x:href`)."""
    return name in URL_ATTRIBUTES or _is_href(name)


def _is_href(name: str) -> bool:
    return name.rpartition(":")[2] == "href"


def _judged(name: str, value: str | None, on: str, of: str) -> tuple[str, dict[str, str]] | None:
    """The variant and fields of the problem an attribute makes, if any; `on` and `of`
    name what holds it (on `<img>`, of `<img>`; in an attribute list, of one)."""
    if value is not None and _HANDLER.fullmatch(name):
        return "handler", {"name": name, "where": on}
    if name in URL_ATTRIBUTES and value and (scheme := unsafe_scheme(value)):
        return "url", {"scheme": scheme, "place": f"the `{name}` {of}"}
    return None


def _attribute_lists(text: str) -> Iterator[Problem]:
    """The unsafe attributes of the attribute lists in `text`, each at its `{`."""
    for match in _ATTRIBUTE_LIST.finditer(text):
        line, col = _line_col(text, match.start())
        for name, value in get_attrs(match[1]):
            if judged := _judged(
                name.lower(), value, "in an attribute list", "of an attribute list"
            ):
                yield Problem(line, col, *judged)


def _inline_problems(content: str, env: dict[str, object]) -> Iterator[Problem]:
    """The links and images of a paragraph or heading with script URLs, then the HTML
    and the attribute lists in its raw text (code spans blanked out: they show HTML,
    they do not hold it)."""
    tokens: list[Token] = []
    _md.inline.parse(content, _md, env, tokens)
    text = list(content)
    for token in tokens:
        start, end = token.meta.get(_SPAN, (0, 0))
        if token.type == "code_inline":
            text[start:end] = [c if c == "\n" else " " for c in text[start:end]]
        elif token.type in ("link_open", "image"):
            url = str(token.attrGet("href" if token.type == "link_open" else "src") or "")
            if scheme := unsafe_scheme(url):
                place = "an image" if token.type == "image" else "a link"
                yield Problem(*_line_col(content, start), "url", {"scheme": scheme, "place": place})
    if "<" in content:
        yield from scan_html("".join(text))
    if "{" in content:
        yield from _attribute_lists("".join(text))


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """The 0-based line and column of `offset` in `text`."""
    return text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1)


def _place(content: str, source: list[str], line: int, col: int) -> tuple[int, int]:
    """A place in a token's content as a place in its source lines: markdown-it strips
    a block's indentation and container markers (`>`, `-`) from each line, so each
    content line is found again at the end of its source line."""
    content_lines = content.split("\n")
    written = content_lines[line] if line < len(content_lines) else ""
    original = source[line] if line < len(source) else ""
    kept, full = written.rstrip(), original.rstrip()
    if full.endswith(kept):
        return line, len(full) - len(kept) + col
    found = original.find(written.strip())
    return line, max(found, 0) + col


def _positioned(rule: RuleFuncInlineType) -> RuleFuncInlineType:
    """`rule`, leaving the span of source it read on the first token it makes: markdown-it
    records no places inside a paragraph."""

    def run(state: StateInline, silent: bool) -> bool:
        start, first = state.pos, len(state.tokens) + (1 if state.pending else 0)
        if not rule(state, silent):
            return False
        if not silent and len(state.tokens) > first:
            state.tokens[first].meta[_SPAN] = (start, state.pos)
        return True

    return run


class _Permissive(MarkdownIt):
    """CommonMark that keeps every URL as written: markdown-it drops `javascript:` links
    to protect its own HTML, which would hide exactly what this rule looks for, and
    percent-encodes the rest, which Python-Markdown does not."""

    def validateLink(self, url: str) -> bool:
        return True

    def normalizeLink(self, url: str) -> str:
        return url


_md = _Permissive("commonmark").disable("inline")  # blocks first; paragraphs only if needed
for _name, _rule in (
    ("backticks", rules_inline.backtick),
    ("link", rules_inline.link),
    ("image", rules_inline.image),
    ("autolink", rules_inline.autolink),
):
    _md.inline.ruler.at(_name, _positioned(_rule))
