"""Whatever the files hold, `check` returns findings, each at a place in the file; it
never raises."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handbook_build import check
from handbook_build.config.settings import from_options

FIELD = st.sampled_from(["id", "title", "kind", "summary", "keywords", "verified", "x"])
SCALAR = st.one_of(
    st.text(max_size=20), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False)
)
MARKDOWN = st.lists(
    st.sampled_from(
        [
            "## H",
            "### H",
            "```yaml",
            "```json",
            "```",
            "a: [",
            "{",
            "- x",
            "> ",
            "text",
            "    code",
            "#",
            "~~~",
        ]
    ),
    max_size=20,
)


def frontmatter_text(fields: dict[str, object]) -> str:
    return "".join(
        f"{k}: {v!r}\n" if not isinstance(v, str) else f"{k}: {v}\n" for k, v in fields.items()
    )


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(
    files=st.lists(
        st.tuples(st.dictionaries(FIELD, SCALAR, max_size=6), MARKDOWN, st.binary(max_size=8)),
        min_size=1,
        max_size=4,
    )
)
def test_check_never_raises(tmp_path_factory, files) -> None:
    root: Path = tmp_path_factory.mktemp("lib")
    docs = root / "docs"
    docs.mkdir()
    texts: dict[str, str | None] = {}
    for n, (fields, lines, noise) in enumerate(files):
        text = "---\n" + frontmatter_text(fields) + "---\n" + "\n".join(lines)
        data = text.encode() + noise
        (docs / f"d{n}.md").write_bytes(data)
        try:
            texts[f"d{n}.md"] = data.decode().replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            texts[f"d{n}.md"] = None
    config = from_options({"library": "p", "version": "1.0.0"}, config_path=root / "mkdocs.yml")
    result = check(config)
    assert len(result.docs) <= len(files)
    for f in result.findings:
        text = texts[f.path]
        if text is not None:  # every place is in the file: a character, or the end of a line
            lines = text.split("\n")
            assert 1 <= f.line <= len(lines), f
            assert 1 <= f.col <= len(lines[f.line - 1]) + 1, f
