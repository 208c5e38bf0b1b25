"""Write this example's reviewer keys and reviews again: `python make_example.py`.

Everything is fixed, so the files come out byte for byte the same: each key is derived
from a constant seed (EXAMPLE KEYS: their private halves are public, in example-keys/;
never declare them as reviewers of a real library), each review has a fixed `--at`
time, and Ed25519 signatures are deterministic. The reviews are written with the real
`handbook review` command; docs/guide/pedigree.md (in Handbook's own docs) explains what
each one does to the doc it is about.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.manifest import utc_seconds
from handbook.bundle.signing import public_key_of
from handbook.cli import main
from handbook.pedigree.records import Invalidation, sign
from handbook_build import load_config
from handbook_build.checks.reviews import write_record

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "mkdocs.yml"
KEYS = HERE / "example-keys"
REVIEWS = HERE / "reviews"
CHANGEOVER = HERE / "docs" / "procedures" / "changeover.md"
# The edit made to the changeover procedure after alice's review: the review names the
# revision before it, so the doc is suspect until someone reviews it again.
REVIEWED_TEXT, EDITED_TEXT = "weigh three reference packs", "weigh five reference packs"

REVIEWS_RUN: list[tuple[str, ...]] = [
    # (reviewer, doc, verdict, time, basis, extra options...)
    ("carol", "procedure.labeller-threading", "corroborate", "2026-07-01T09:00:00Z",
     "Threaded a reel on the retrofitted unwind following the steps."),
    ("alice", "procedure.changeover", "corroborate", "2026-10-01T09:00:00Z",
     "Ran a changeover from 250 g to 500 g packs with these steps."),
    ("alice", "device.orbis.l40", "approve", "2026-11-02T09:00:00Z",
     "Read every status register on the line's L40.",
     "--evidence", "https://plant.example.invalid/commissioning/l40-2026-11.pdf"),
    ("bob", "device.orbis.l40", "approve", "2026-11-03T09:00:00Z",
     "Checked the register table against the vendor manual, edition 4."),
    ("bob", "device.kestrel.cw5", "approve", "2026-11-04T09:00:00Z",
     "Compared the weight registers with a live read."),
    ("alice", "procedure.reject-bin", "approve", "2026-11-05T09:00:00Z",
     "Walked through the steps with the line lead."),
    ("bob", "guide.line-controller-api", "corroborate", "2026-11-10T09:00:00Z",
     "Called the three endpoints on the line controller."),
    ("carol", "procedure.reject-bin", "contradict", "2026-11-25T09:00:00Z",
     "Since the November interlock change, opening the door stops the belt too.",
     "--section", "Clearing the bin"),
]  # fmt: skip

INVALIDATION = ("carol", "urn:api:line-controller:v2", "2026-11-20T00:00:00Z")
"""The line controller's API changed on 2026-11-20, after bob's corroboration."""


def example_key(name: str) -> Ed25519PrivateKey:
    seed = hashlib.sha256(f"handbook example reviewer {name} - never use for real".encode())
    return Ed25519PrivateKey.from_private_bytes(seed.digest())


def write_keys() -> None:
    """The example keys as `handbook keygen` writes them, checked against mkdocs.yml."""
    reviews = load_config(CONFIG).reviews
    assert reviews is not None
    declared = dict(reviews.reviewers)
    KEYS.mkdir(exist_ok=True)
    for name, public in declared.items():
        key = example_key(name)
        if str(public_key_of(key)) != public:
            raise SystemExit(f"mkdocs.yml declares {name} as {public}, not {public_key_of(key)}")
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        (KEYS / f"{name}.pem").write_bytes(pem)


def review(reviewer: str, doc: str, verdict: str, at: str, basis: str, *extra: str) -> None:
    args = ["review", doc, "--verdict", verdict, "--basis", basis, "--at", at, *extra]
    key = str(KEYS / f"{reviewer}.pem")
    main.main([*args, "--key", key, "--config", str(CONFIG)], standalone_mode=False)


def write_reviews() -> None:
    for old in REVIEWS.glob("*.json"):
        old.unlink()
    edited = CHANGEOVER.read_text(encoding="utf-8")
    assert EDITED_TEXT in edited, f"{CHANGEOVER} no longer says {EDITED_TEXT!r}"
    try:
        CHANGEOVER.write_text(edited.replace(EDITED_TEXT, REVIEWED_TEXT), encoding="utf-8")
        for run in REVIEWS_RUN:
            if run[1] != "procedure.changeover":
                continue
            review(*run)
    finally:
        CHANGEOVER.write_text(edited, encoding="utf-8")
    for run in REVIEWS_RUN:
        if run[1] != "procedure.changeover":
            review(*run)
    # `handbook invalidate URI --at TIME --key K` writes this record, but stamps it as
    # issued now (the time it is signed), so its file would differ on every run; the
    # example signs the same record through the records API at a fixed time instead.
    reviewer, uri, at = INVALIDATION
    changed = utc_seconds(at)
    assert changed is not None
    key = example_key(reviewer)
    record = Invalidation("", "packaging-line", uri, changed, public_key_of(key).keyid, changed)
    path = write_record(REVIEWS, sign(record, key))
    print(f"{uri} changed -> {path.relative_to(HERE)}")


if __name__ == "__main__":
    write_keys()
    write_reviews()
