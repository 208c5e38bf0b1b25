"""HB403 unsafe-html: script in a body is found by tokenizers, at its line and column,
whatever hides it from a reader; what only shows HTML (code) is never found; the level is
configurable like every rule; and the cheap test that skips most bodies never skips one
with a finding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handbook_build.checks import unsafe_html
from handbook_build.checks.unsafe_html import check, may_hold_script, scan_body, unsafe_scheme
from handbook_build.read.parse import parse
from handbook_build.read.source import Text

FM = "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n---\n"
"""Six lines: a body's first line is line 7 of the file."""

SCRIPT = (
    "`<script>` element: it runs on every reader's page; remove it "
    "(a site-wide script belongs in mkdocs.yml's `extra_javascript`)"
)


def handler(name: str, tag: str) -> str:
    where = "in an attribute list" if tag == "{" else f"on `<{tag}>`"
    return (
        f"event handler `{name}` {where}: it runs script on the reader's page; remove the attribute"
    )


def url(scheme: str, place: str) -> str:
    return (
        f"`{scheme}` URL in {place}: following it runs script; "
        "link to an http(s) or relative address instead"
    )


def findings(body: str) -> list[str]:
    doc, problems = parse(Text("a.md", FM + body))
    assert doc is not None and problems == []
    return [str(f) for f in check(doc)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<script>alert(1)</script>\n", f"a.md:7:1: HB403 {SCRIPT}"),
        ("Text <SCRIPT src=x.js></SCRIPT> inline.\n", f"a.md:7:6: HB403 {SCRIPT}"),
        ('A <img src="x" onerror="alert(1)"> b\n', f"a.md:7:3: HB403 {handler('onerror', 'img')}"),
        (
            "<div\n  onMouseOver='x()'>\n</div>\n",
            f"a.md:7:1: HB403 {handler('onmouseover', 'div')}",
        ),
        ("<img src=x/ onerror=alert(1)>\n", f"a.md:7:1: HB403 {handler('onerror', 'img')}"),
        ("See [here](javascript:alert(1)).\n", f"a.md:7:5: HB403 {url('javascript:', 'a link')}"),
        ("![i](vbscript:x)\n", f"a.md:7:1: HB403 {url('vbscript:', 'an image')}"),
        ("<javascript:alert(1)>\n", f"a.md:7:1: HB403 {url('javascript:', 'a link')}"),
        ("[x](javascript&#58;alert(1))\n", f"a.md:7:1: HB403 {url('javascript:', 'a link')}"),
        ("[x](<java\tscript:alert(1)>)\n", f"a.md:7:1: HB403 {url('javascript:', 'a link')}"),
        ("[x][r]\n\n[r]: JavaScript:alert(1)\n", f"a.md:7:1: HB403 {url('javascript:', 'a link')}"),
        (
            '<a href=" jav&#x09;ascript:alert(1)">x</a>\n',
            f"a.md:7:1: HB403 {url('javascript:', 'the `href` of `<a>`')}",
        ),
        (
            "<form action='data: text/html,<b>x</b>'></form>\n",
            f"a.md:7:1: HB403 {url('data:text/html', 'the `action` of `<form>`')}",
        ),
        (
            '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>\n',
            f"a.md:7:1: HB403 {SCRIPT}",
        ),
        # Python-Markdown, which renders the site, keeps `\<img …>` a tag
        (
            "Escaped \\<img src=x onerror=alert(1)> still runs.\n",
            f"a.md:7:10: HB403 {handler('onerror', 'img')}",
        ),
        # html.parser raised on `<![word[`, which browsers read as a comment to the `>`
        ("<![data[ x ]]> <b onclick=y>\n", f"a.md:7:16: HB403 {handler('onclick', 'b')}"),
        # Python-Markdown's attr_list gives the element before it any attribute
        ('[x](y){: onclick="alert(1)" }\n', f"a.md:7:7: HB403 {handler('onclick', '{')}"),
        ("# Title {:onMouseOver=x}\n", f"a.md:7:9: HB403 {handler('onmouseover', '{')}"),
        (
            "Para\n{: href='javascript:x' }\n",
            f"a.md:8:1: HB403 {url('javascript:', 'the `href` of an attribute list')}",
        ),
        ('```{.py onclick="x"}\ncode\n```\n', f"a.md:7:4: HB403 {handler('onclick', '{')}"),
        # inside containers: the place is in the file, past `>` and list markers
        ("> quoted <b onclick=x>b</b>\n", f"a.md:7:10: HB403 {handler('onclick', 'b')}"),
        ("- item\n\n  1. <script>x()</script>\n", f"a.md:9:6: HB403 {SCRIPT}"),
        ("Code `x` then <b onclick=x>.\n", f"a.md:7:15: HB403 {handler('onclick', 'b')}"),
    ],
)
def test_each_way_to_run_script_is_found_where_it_is_written(body: str, expected: str) -> None:
    assert findings(body) == [expected]


@pytest.mark.parametrize(
    "body",
    [
        "Code: `<script>alert(1)</script>` and `<img onerror=x>` and `{: onclick=x }`.\n",
        "Attributes that run nothing: [x](y){: .big #top title='on=1' onclick }\n",
        "```html\n<script>alert(1)</script>\n<b onclick=x>\n```\n",
        "    <script>alert(1)</script>\n",
        "Entities show a tag: &lt;script&gt; and &lt;b onclick=x&gt;.\n",
        "[ok](https://example.com/javascript:x) and [rel](docs/data:x.md) ![i](data:image/png;base64,AA)\n",
        '<a href="https://example.com" title="javascript: the good parts">x</a>\n',
        "<img src=x onerror>\n",  # no value, nothing to run
        '<button on:click="go()">Svelte</button> <a x-on:click="go()">Alpine</a>\n',
        "Run the following script: `./go`; the data: field is [here](#x).\n",
        "<!-- <script>alert(1)</script> -->\n",
        "A tag never closed <img src=x onerror=alert(1)\n",
    ],
)
def test_what_only_shows_html_is_not_found(body: str) -> None:
    assert findings(body) == []


def test_every_problem_is_reported() -> None:
    body = (
        "# Page\n\n<script>a()</script>\n\n"
        "<p onclick=a() onkeyup=b()><a href='javascript:c()'>x</a></p>\n\n"
        "[y](javascript:d())\n"
    )
    assert findings(body) == [
        f"a.md:9:1: HB403 {SCRIPT}",
        f"a.md:11:1: HB403 {handler('onclick', 'p')}",
        f"a.md:11:1: HB403 {handler('onkeyup', 'p')}",
        f"a.md:11:28: HB403 {url('javascript:', 'the `href` of `<a>`')}",
        f"a.md:13:1: HB403 {url('javascript:', 'a link')}",
    ]


@pytest.mark.parametrize(
    ("written", "scheme"),
    [
        ("javascript:x", "javascript:"),
        ("  \x01JaVaScRiPt:x", "javascript:"),
        ("java\n\tscript:x", "javascript:"),
        ("vbscript:x", "vbscript:"),
        ("data:text/html;base64,PHNjcmlwdD4=", "data:text/html"),
        ("DATA: Text/HTML,x", "data:text/html"),
        ("data:image/png;base64,AA", None),
        ("https://x/javascript:y", None),
        ("java script:x", None),
        ("./javascript.md", None),
    ],
)
def test_urls_are_read_as_a_browser_reads_them(written: str, scheme: str | None) -> None:
    assert unsafe_scheme(written) == scheme


FRAGMENTS = [
    *("<", ">", "/", "=", '"', "'", "`", " ", "\n", "\t", "\\", "[", "]", "(", ")", ":", "!"),
    *("-", "&", ";", "#", "x", "on", "onclick", "script", "java", "data", "text/html"),
    *("srcdoc", "href", "img", "&#58;", "&#x09;", "&lt;", "&gt;", "&colon;", "    ", "> "),
    *("- ", "```", "<![", "<!--", "-->", "</script>"),
    # whole findings, for the noise around them to hide
    *("<b onclick=x>", "<b/onclick=x>", "<b x='y'onclick=x>", "<b `x` onclick=x>"),
    *("[x](javascript:y)", "[x](JAVA&#83;CRIPT:y)", "[x](javascript\\:y)", "<script>"),
    *("<a href='java&#x09;script:x'>", "<iframe srcdoc='&lt;b onclick=x&gt;'>"),
    *("[x]: data:text/html,x", "<javascript:x>", "<object data='data:text/html,x'>"),
    *("{", "}", "{: ", "{:onclick=x}", "{ href='java\tscript:x'}", "```{.py onclick=x}\n"),
    *("xon'onclick=1", "buttononclick=", "ONCLICK=", "on:click="),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_the_quick_test_never_skips_a_body_with_a_finding(body: str) -> None:
    assert may_hold_script(body) or scan_body(body) == []


def test_pathological_html_never_reaches_the_parser_unterminated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unterminated tags made CPython's html.parser reread its input for each `<`
    (5,000 `<x ` took five seconds): the scan feeds it nothing after the last `>`, so
    no unterminated tag is ever reread."""
    fed: list[str] = []
    original = unsafe_html._Tags.feed

    def feed(self: unsafe_html._Tags, data: str) -> None:
        fed.append(data)
        original(self, data)

    monkeypatch.setattr(unsafe_html._Tags, "feed", feed)
    for body in ("<x " * 5_000, "<a\n" * 5_000, "<a/" * 5_000, "<b>ok</b> " + "<x " * 5_000):
        fed.clear()
        findings(body + " data:\n")
        assert fed, body[:6]  # the HTML was scanned
        assert all(chunk == "" or chunk.endswith(">") for chunk in fed), body[:6]


def test_a_script_url_in_a_frontmatter_value_is_found() -> None:
    """`template: redirect.html` with `location: javascript:…` ran script through
    Material's redirect page; any field holding a script URL is a finding at its value."""
    text = (
        "---\nid: a.b\ntitle: T\nkind: guide\nsummary: S\ntemplate: redirect.html\n"
        'location: " JaVaScRiPt:alert(1)"\nlinks: [https://example.org, "vbscript:x"]\n---\nbody\n'
    )
    doc, problems = parse(Text("a.md", text))
    assert doc is not None and problems == []
    assert [str(f) for f in check(doc)] == [
        f"a.md:7:11: HB403 {url('javascript:', 'field `location`')}",
        f"a.md:8:8: HB403 {url('vbscript:', 'field `links`')}",
    ]
