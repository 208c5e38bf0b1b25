"""`Library.open` takes whom to trust as one `TrustPolicy` (`trust=`) or as the keywords
it is made from, as before; the two spellings open the same library, and giving both is
refused instead of one silently winning (trust= used to override the keywords)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import PUBLIC

from handbook import Library
from handbook.bundle.trust import TrustPolicy
from handbook.errors import LibraryMismatchError


def _seen(library: Library) -> dict[str, Any]:
    status = dict(library.status())
    del status["loaded_at"]
    return status


def test_both_spellings_open_the_same_library(plant_floor_bundle: Path) -> None:
    old = Library.open(plant_floor_bundle, [PUBLIC], threshold=1, expect_library="plant-floor")
    new = Library.open(
        plant_floor_bundle, trust=TrustPolicy.of([PUBLIC], expect_library="plant-floor")
    )
    assert _seen(old) == _seen(new) and old.bundle.signed_by == new.bundle.signed_by
    assert old.search("modbus") == new.search("modbus")


def test_both_spellings_refuse_alike(plant_floor_bundle: Path) -> None:
    with pytest.raises(LibraryMismatchError) as old:
        Library.open(plant_floor_bundle, [PUBLIC], expect_library="other")
    with pytest.raises(LibraryMismatchError) as new:
        Library.open(plant_floor_bundle, trust=TrustPolicy.of([PUBLIC], expect_library="other"))
    assert str(old.value) == str(new.value)


@pytest.mark.parametrize(
    ("keys", "options", "named"),
    [
        ([PUBLIC], {}, "trusted_keys"),
        (None, {"allow_unsigned": True}, "allow_unsigned"),
        (None, {"expect_audience": "public", "threshold": 2}, "expect_audience, threshold"),
    ],
)
def test_trust_and_trust_keywords_together_are_refused(
    plant_floor_bundle: Path, keys: list[str] | None, options: dict[str, Any], named: str
) -> None:
    policy = TrustPolicy.of([PUBLIC])
    with pytest.raises(TypeError, match=f"trust= .*give it or {named}, not both"):
        Library.open(plant_floor_bundle, keys, trust=policy, **options)
