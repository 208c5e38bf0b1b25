"""`brief` ranks by relevance * confidence * freshness (* the ref bonus), checked by hand on
a library of three docs whose calibration sections are word for word the same, so only
their pedigrees tell them apart; and `ask` says so when its top source is contested."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MakeLibrary, run_cli
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook import Library
from handbook.bundle.manifest import utc_seconds
from handbook.bundle.signing import public_key_of
from handbook_build import load_config
from handbook_build.pipeline import build

NOW = utc_seconds("2027-01-11T00:00:00Z")
REVIEWED_AT = "2027-01-01T00:00:00Z"  # ten days before NOW
CALIBRATION = """
## Calibration

Zero the pressure transmitter with the valve closed, then apply the reference pressure
and trim the span until the reading matches.
"""


def doc(name: str, limit: str, aliases: str = "[]") -> str:
    return f"""---
id: sensor.{name}
title: {name.title()} transmitter
kind: device
summary: The {name} transmitter.
aliases: {aliases}
---
{CALIBRATION}
## Limits

The {limit} limit is 42 units.
"""


def key(tmp_path: Path, name: str, seed: int) -> tuple[Path, str]:
    private = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = tmp_path / f"{name}.pem"
    path.write_bytes(pem)
    return path, str(public_key_of(private))


@pytest.fixture
def bundle(tmp_path: Path, make_library: MakeLibrary) -> Path:
    alice, alice_public = key(tmp_path, "alice", 1)
    bob, bob_public = key(tmp_path, "bob", 2)
    config = make_library(
        {
            "alpha.md": doc("alpha", "flow", aliases="[XT-9]"),
            "beta.md": doc("beta", "voltage"),
            "gamma.md": doc("gamma", "torque"),
        },
        reviews={
            "reviewers": {"alice": alice_public, "bob": bob_public},
            "horizon": "30d",
            "required_approvals": 0,
        },
    )
    for doc_id, reviewer, verdict in [
        ("sensor.beta", alice, "approve"),
        ("sensor.beta", bob, "corroborate"),
        ("sensor.gamma", alice, "approve"),
        ("sensor.gamma", bob, "contradict"),
    ]:
        run = run_cli(
            "review", doc_id, "--verdict", verdict, "--basis", f"{verdict} after a bench test",
            "--key", str(reviewer), "--at", REVIEWED_AT, "--config", str(config),
        )  # fmt: skip
        assert run.exit_code == 0, run.stderr
    out = tmp_path / "bundle"
    build(load_config(config), out, None)
    return out


@pytest.fixture
def library(bundle: Path) -> Library:
    return Library.open(bundle, allow_unsigned=True, clock=lambda: NOW)


TASK = "zero the pressure transmitter and trim the span"


def test_briefing_order_follows_the_documented_score(library: Library) -> None:
    items = library.brief(TASK)["items"]
    by_id = {item["id"]: item for item in items}
    assert {item["relevance"] for item in items} == {1.0}  # the same words, the same rank
    # by hand: beta (S=2, C=0) 3/4 confident, vouched 10 days ago: 30/(30+10) = 0.75 fresh;
    # gamma (S=1, C=1) 2/5 = 0.4, also 0.75 fresh; alpha never reviewed: prior 0.5, 0.5 fresh
    assert by_id["sensor.beta"]["confidence"] == 0.75
    assert by_id["sensor.beta"]["freshness"] == 0.75
    assert by_id["sensor.gamma"]["confidence"] == 0.4
    assert by_id["sensor.alpha"]["freshness"] == 0.5
    assert [(i["id"], i["score"]) for i in items] == [
        ("sensor.beta", 0.5625),
        ("sensor.gamma", 0.3),
        ("sensor.alpha", 0.25),
    ]
    assert by_id["sensor.gamma"]["verify_first"].startswith("1 open contradiction(s)")
    assert "verify_first" not in by_id["sensor.beta"]


def test_a_named_ref_lifts_the_doc_it_is_about(library: Library) -> None:
    items = library.brief(TASK, refs=["xt 9"])["items"]  # alpha's alias XT-9
    assert [(i["id"], i["score"], i["about_ref"]) for i in items] == [
        ("sensor.beta", 0.5625, False),
        ("sensor.alpha", 0.375, True),
        ("sensor.gamma", 0.3, False),
    ]


def test_freshness_decays_with_time_and_confidence_does_not(bundle: Path) -> None:
    later = Library.open(bundle, allow_unsigned=True, clock=lambda: NOW + 50 * 86_400)
    beta = next(i for i in later.brief(TASK)["items"] if i["id"] == "sensor.beta")
    assert beta["confidence"] == 0.75
    assert beta["freshness"] == round(30 / (30 + 60), 3)
    assert beta["pedigree"]["state"] == "stale"
    assert beta["verify_first"] == "last re-checked 60 days ago"


def test_ask_cautions_when_its_top_source_is_contested(library: Library) -> None:
    answer = library.ask("what is the torque limit")
    assert answer["evidence_state"] == "grounded"
    assert answer["sources"][0]["document_id"] == "sensor.gamma"
    assert answer["caution"].startswith("the top source, test:sensor.gamma, is contested")
    assert answer["answer"].startswith("Caution: ")
    assert "caution" not in library.ask("what is the voltage limit")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"task": ""}, "task must be a non-empty string"),
        ({"task": "x", "refs": "XT-9"}, "refs must be a list"),
        ({"task": "x", "topics": [""]}, "topics must be a list"),
        ({"task": "x", "limit": 0}, "limit must be a whole number"),
    ],
)
def test_bad_arguments_are_refused_with_what_to_do(
    library: Library, arguments: dict[str, object], message: str
) -> None:
    answer = library.brief(**arguments)  # type: ignore[arg-type]
    assert answer["items"] == []
    assert answer["error"]["code"] == "bad_arguments"
    assert answer["error"]["message"].startswith(message)


def test_retired_docs_are_left_out(tmp_path: Path, make_library: MakeLibrary) -> None:
    old = doc("alpha", "flow").replace("kind: device", "kind: device\nretired: true")
    config = make_library({"alpha.md": old, "beta.md": doc("beta", "voltage")})
    build(load_config(config), tmp_path / "bundle", None)
    items = Library.open(tmp_path / "bundle", allow_unsigned=True).brief(TASK)["items"]
    assert [i["id"] for i in items] == ["sensor.beta"]
    assert items[0]["confidence"] == 0.5 and "pedigree" not in items[0]
