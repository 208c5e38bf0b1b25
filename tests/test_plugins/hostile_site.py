"""A library whose authors try to run script through their frontmatter, built into a site
with `mkdocs build` (MkDocs, Material and the handbook plugin), for the tests that read
the site as files (test_site_escaping.py) and in a browser (test_site_xss.py,
test_site_origin.py).

Every doc carries one payload in every field: title, kind, summary, description,
keywords, aliases and custom fields (a card fact, Material's page author and nav
subtitle). Each payload names where it was put (`alert('attribute@devices/attr.md')`),
so a script that runs says which slot let it through. Some payloads would take the page
out of the site's hands instead: a `<base>` that moves the theme's scripts to another
host, a `<meta http-equiv="refresh">` that navigates away, an SVG `<set>` that makes a
link `javascript:` (test_site_origin.py looks for their effects). Summaries also try to
forge llms.txt sections and links with line breaks. One body holds script of its own,
which HB403 reports and the library allows (`warn`); it only runs when clicked. Another
shows the same elements in code, where they are text, beside look-alikes HB403 does not
report. One file ends right after its frontmatter, without a line break, which MkDocs
alone does not take for frontmatter. And one page is not a doc (Handbook's `exclude`
skips it) but MkDocs renders it all the same.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from conftest import KEY_PEM
from site_helpers import mkdocs_build

SITE_NAME = "Hostile site"
PAYLOADS = {
    "script": "<script>alert('{at}')</script>",
    "attribute": "\"><img src=x onerror=alert('{at}')>",
    "url": "javascript:alert('{at}')",
    "link": "[x](javascript:alert('{at}'))",
    "base": "<base href='http://127.0.0.1:9/{at}/'>",
    "refresh": "<meta http-equiv='refresh' content='0;url=http://127.0.0.1:9/{at}'>",
    "animate": "<svg><a><set attributeName='href' to=\"javascript:alert('{at}')\"/>"
    "<text>x</text></a></svg>",
}
DOCS = {
    "index.md": "script",
    "devices/attr.md": "attribute",
    "guides/url.md": "url",
    "guides/link.md": "link",
    "eof.md": "script",
    "guides/base.md": "base",
    "guides/refresh.md": "refresh",
    "guides/animate.md": "animate",
}
"""Doc path -> the payload its fields carry."""
DRAFTS = {"drafts/draft.md": "attribute"}
"""Pages Handbook does not read (`exclude`), with the payload their fields carry."""
PAGES = {**DOCS, **DRAFTS}
BODY_SCRIPT = (
    "<a href=\"javascript:alert('body')\">a body link</a> "
    "<span onclick=\"alert('body')\">a handler</span>"
)
"""The author's own script, allowed at `warn`; it runs only when clicked."""
BODY_CODE = (
    "Shown, not run: `<base href='http://127.0.0.1:9/code/'>` and\n\n"
    '```html\n<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/code">\n'
    '<svg><a><set attributeName="href" to="javascript:alert(\'code\')"/></a></svg>\n```\n\n'
    "The word javascript: in prose, and an animation that moves no link: "
    '<svg width="8" height="8"><rect width="8" height="8">'
    '<animate attributeName="opacity" from="1" to="0.5" dur="1s"/></rect></svg>'
)
"""Look-alikes of the payloads that HB403 does not report (code is text; the rest runs
nothing), in the body of the doc `BODY_CODE_IN`."""
BODY_CODE_IN = "guides/base.md"


def payload(path: str, field: str) -> str:
    return PAYLOADS[PAGES[path]].format(at=f"{field}@{path}")


def fields(n: int, path: str) -> dict[str, object]:
    """The frontmatter of page `n`: a payload in every field."""
    return {
        "id": f"hostile.doc{n}",
        "title": f"Hostile {n} {payload(path, 'title')}",
        "kind": f"kind {payload(path, 'kind')}",
        "summary": f"Summary {n} {payload(path, 'summary')}\n\n## Forged {n}\n\n"
        f"- [forged {n}](https://evil.example/{n})",
        "description": payload(path, "description"),
        "keywords": [f"word{n}", payload(path, "keywords")],
        "aliases": [payload(path, "aliases")],
        "vendor": payload(path, "vendor"),
        "author": payload(path, "author"),
        "subtitle": payload(path, "subtitle"),
    }


def titles() -> dict[str, str]:
    """Page path -> its title, as the site must show it."""
    return {path: str(fields(n, path)["title"]) for n, path in enumerate(PAGES)}


def write_library(root: Path) -> Path:
    """The library's files under `root`; returns its mkdocs.yml."""
    for n, path in enumerate(PAGES):
        head = "---\n" + yaml.safe_dump(fields(n, path), sort_keys=False) + "---"
        if path == "eof.md":  # the file ends with the closing `---`
            text = head
        elif n == 1:
            text = f"{head}\nBody of doc {n}.\n\n{BODY_SCRIPT}\n"
        elif path == BODY_CODE_IN:
            text = f"{head}\nBody of doc {n}.\n\n{BODY_CODE}\n"
        else:
            text = f"{head}\nBody of doc {n}.\n"
        (root / "docs" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / path).write_text(text, encoding="utf-8")
    config = {
        "site_name": SITE_NAME,
        "docs_dir": "docs",
        "site_dir": "site",
        "theme": {"name": "material", "font": False},  # no fonts from the network
        "plugins": [
            "search",
            {
                "handbook": {
                    "library": "hostile-site",
                    "version": "1.0.0",
                    "list_fields": ["vendor"],
                    "rules": {"HB403": "warn"},
                    "exclude": list(DRAFTS),
                }
            },
        ],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root / "mkdocs.yml"


def build_site(root: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build` of the library, written under `root` and signed with the test key
    (not `--strict`: the body's script is a warning); the site is `root / "site"`."""
    write_library(root)
    return mkdocs_build(root, key_pem=KEY_PEM)
