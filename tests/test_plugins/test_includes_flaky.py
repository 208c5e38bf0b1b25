"""An include that fails only while failures are tolerated (a download that timed out
once, then came through) is reported at its line, never dropped from the page in
silence."""

from __future__ import annotations

from pathlib import Path

from markdown.preprocessors import Preprocessor

from handbook_build.read.includes import Expander

INCLUDE = "--8<-- https://example.org/part.md"


class _Lenient(Preprocessor):
    """Tolerating failures, it drops the include it could not fetch."""

    def run(self, lines: list[str]) -> list[str]:
        return [line for line in lines if line != INCLUDE]


class _Alone(Preprocessor):
    """The same include on its own line: the download times out."""

    def run(self, lines: list[str]) -> list[str]:
        if INCLUDE in lines:
            raise TimeoutError("the download timed out")
        return lines


class _Strict(Preprocessor):
    """Told to fail, it finds the part this time."""

    def run(self, lines: list[str]) -> list[str]:
        return ["The part." if line == INCLUDE else line for line in lines]


def test_a_failure_only_the_tolerant_run_meets_is_a_finding(tmp_path: Path) -> None:
    expander = Expander([], tmp_path, 10_000)
    expander.lenient, expander.alone, expander.strict = [_Lenient()], [_Alone()], [_Strict()]
    expansion = expander.expand("guide.md", f"Intro.\n{INCLUDE}\nOutro.", 7)
    assert expansion.body == "Intro.\nOutro."
    assert [str(f) for f in expansion.findings] == [
        f"guide.md:8:1: HB511 `{INCLUDE}` is not expanded: the download timed out; "
        "fix the include, or add the file or section it names"
    ]
