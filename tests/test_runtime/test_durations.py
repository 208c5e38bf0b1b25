"""The one duration grammar (`90d`, `12h`), and every setting that takes a duration
reading it alike: the review `horizon`, the bundle's `expires`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PUBLIC

from handbook import durations
from handbook_build.config.options import EXPIRES
from handbook_build.config.settings import ConfigError, load_config
from handbook_build.write.bundles import expiry


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h", 3_600),
        ("12h", 43_200),
        ("1d", 86_400),
        ("90d", 90 * 86_400),
        ("999999h", 999_999 * 3_600),
    ],
)
def test_a_duration_is_days_or_hours(text: str, seconds: int) -> None:
    assert durations.seconds(text) == seconds


@pytest.mark.parametrize(
    "text",
    ["", "d", "0d", "07d", "1000000d", "90", "90m", "1.5d", "-1d", " 90d", "90d ", "90D", "1w"],
)
def test_anything_else_is_refused_saying_what_a_duration_is(text: str) -> None:
    with pytest.raises(ValueError) as info:
        durations.seconds(text)
    assert str(info.value) == (
        f"{text!r} is not a duration like 90d or 12h (a whole number of days or hours)"
    )


@pytest.mark.parametrize(
    ("text", "taken"),
    [("90d", True), ("12h", True), ("2027-01-31T00:00:00Z", True), ("0d", False), ("90m", False)],
)
def test_expires_takes_the_durations_and_utc_times(text: str, taken: bool) -> None:
    assert bool(EXPIRES.fullmatch(text)) is taken


def test_expires_after_the_build_adds_the_duration() -> None:
    assert expiry("2026-01-01T00:00:00Z", "90d") == "2026-04-01T00:00:00Z"
    assert expiry("2026-01-01T00:00:00Z", "12h") == "2026-01-01T12:00:00Z"
    assert expiry("2026-01-01T00:00:00Z", "2027-01-31T00:00:00Z") == "2027-01-31T00:00:00Z"


def test_a_review_horizon_that_is_no_duration_is_reported_in_the_grammars_words(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    path = tmp_path / "mkdocs.yml"
    path.write_text(
        "site_name: x\nplugins:\n  - handbook:\n      library: lib\n      version: 1.0.0\n"
        f"      reviews:\n        reviewers: {{alice: '{PUBLIC}'}}\n        horizon: 3w\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    shown = [str(f).removeprefix(f"{path}:") for f in info.value.findings]
    assert shown == [
        "6:7: HB001 handbook.reviews.horizon: "
        "'3w' is not a duration like 90d or 12h (a whole number of days or hours)"
    ]
