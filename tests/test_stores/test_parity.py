"""One suite, both stores: SQLite and PostgreSQL must answer every call alike.

Each test runs once per store kind (the `site` fixture): a new SQLite file, or a new
database on the session's real PostgreSQL server (tests/pg_server.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from store_helpers import T0, Site, check_consistent, open_store, record

from handbook.inbox.store import (
    HOUR,
    MIGRATIONS,
    Caps,
    Event,
    Store,
    Stored,
    StoreError,
    StoreUnavailable,
)

pytest_plugins = ["store_fixtures"]


@pytest.fixture
def store(site: Site) -> Iterator[Store]:
    opened = site.open()
    yield opened
    opened.close()


def refusal(store: Store, stored: Stored, caps: Caps) -> StoreError:
    with pytest.raises(StoreError) as refused:
        store.add(stored, caps)
    return refused.value


# -- add and get -------------------------------------------------------------------------


def test_add_keeps_the_record_open_and_a_retried_add_returns_it(store: Store) -> None:
    first = record("r1")
    assert store.add(first, Caps()) == (first, True)
    assert store.get("r1") == first
    assert store.get("r1").state == "open"  # type: ignore[union-attr]
    again = first._replace(payload={"basis": "a retry that differs"}, created_at=T0 + 5)
    assert store.add(again, Caps()) == (first, False)
    assert store.get("nope") is None
    assert [(e.record, e.action) for e in store.events()] == [("r1", "submitted")]


def test_a_retried_add_of_a_decided_record_returns_it_decided(store: Store) -> None:
    store.add(record("r1"), Caps())
    decided = store.decide("r1", "rejected", "alice", T0 + 10, "wrong register")
    assert store.add(record("r1"), Caps()) == (decided, False)


# -- caps --------------------------------------------------------------------------------


def test_over_the_hourly_cap_a_principal_is_refused_and_nothing_is_stored(store: Store) -> None:
    caps = Caps(per_principal_per_hour=2, open_per_doc=100)
    store.add(record("old", created_at=T0 - HOUR - 10), caps)  # over an hour before
    store.add(record("r1", created_at=T0 - 10), caps)
    store.add(record("r2", created_at=T0 - 5, doc="other"), caps)
    refused = refusal(store, record("r3"), caps)
    assert (refused.code, str(refused)) == (
        "rate_limited",
        "agent-a wrote 2 records in the last hour; the limit is 2: try again later",
    )
    assert store.get("r3") is None
    assert "r3" not in {e.record for e in store.events()}
    assert store.add(record("b1", principal="agent-b"), caps)[1]  # others may write
    assert store.add(record("r2", created_at=T0 - 5, doc="other"), caps)[1] is False  # retries too


def test_over_the_open_cap_a_doc_is_refused_until_one_is_decided(store: Store) -> None:
    caps = Caps(per_principal_per_hour=100, open_per_doc=2)
    store.add(record("r1", principal="a"), caps)
    store.add(record("r2", principal="b"), caps)
    refused = refusal(store, record("r3", principal="c"), caps)
    assert (refused.code, str(refused)) == (
        "too_many_open",
        "pump-101 has 2 open records; the limit is 2: wait until people decide them",
    )
    assert store.get("r3") is None
    assert store.add(record("x1", principal="c", doc="valve-7"), caps)[1]
    assert store.add(record("y1", principal="c", library="other-library"), caps)[1]
    store.decide("r1", "accepted", "alice", T0 + 1, "checked")
    assert store.add(record("r3", principal="c"), caps)[1]
    assert [e.action for e in store.events()] == [
        "submitted",
        "submitted",
        "submitted",
        "submitted",
        "accepted",
        "submitted",
    ]


# -- reading -----------------------------------------------------------------------------


def test_records_are_oldest_first_filtered_and_paged(store: Store) -> None:
    for id, doc, at in [
        ("e", "d1", T0 + 2),
        ("b", "d2", T0 + 1),
        ("a", "d1", T0 + 1),
        ("Z", "d2", T0 + 1),
        ("c", "d1", T0 + 3),
    ]:
        store.add(record(id, doc=doc, created_at=at), Caps())
    store.decide("a", "accepted", "alice", T0 + 9, "")
    store.decide("c", "rejected", "alice", T0 + 9, "")

    def ids(found: list[object]) -> list[str]:
        return [r.id for r in found]  # type: ignore[attr-defined]

    assert ids(store.records()) == ["Z", "a", "b", "e", "c"]  # ties by id, in byte order
    assert ids(store.records(state="open")) == ["Z", "b", "e"]
    assert ids(store.records(doc="d1")) == ["a", "e", "c"]
    assert ids(store.records(state="open", doc="d1")) == ["e"]
    assert ids(store.records(state="accepted", doc="d2")) == []
    assert ids(store.records(limit=2)) == ["Z", "a"]
    assert ids(store.records(limit=2, offset=2)) == ["b", "e"]
    assert ids(store.records(limit=2, offset=4)) == ["c"]
    assert ids(store.records(offset=5)) == []


def test_open_for_gives_each_docs_open_records(store: Store) -> None:
    store.add(record("r1", doc="d1"), Caps())
    store.add(record("r2", doc="d1", created_at=T0 - 1), Caps())
    store.add(record("r3", doc="d2"), Caps())
    store.add(record("r4", doc="d3"), Caps())
    store.add(record("r5", doc="d1", library="other"), Caps())
    store.decide("r4", "accepted", "alice", T0 + 1, "")
    many = [f"doc-{n}" for n in range(1200)]  # more than one SQLite chunk
    found = store.open_for("plant-floor", ["d1", *many, "d2", "d3", "d1", "d9"])
    assert {doc: [r.id for r in rs] for doc, rs in found.items()} == {
        "d1": ["r2", "r1"],
        "d2": ["r3"],
    }
    assert found["d2"] == [record("r3", doc="d2")]
    assert store.open_for("plant-floor", []) == {}


# -- deciding ----------------------------------------------------------------------------


def test_decide_accepts_or_rejects_an_open_record_once(store: Store) -> None:
    store.add(record("r1"), Caps())
    store.add(record("r2"), Caps())
    accepted = store.decide("r1", "accepted", "alice", T0 + 10, "checked on site")
    assert accepted == record("r1")._replace(
        state="accepted", decided_by="alice", decided_at=T0 + 10, reason="checked on site"
    )
    assert store.get("r1") == accepted
    assert store.decide("r2", "rejected", "bob", T0 + 11, "").state == "rejected"
    messages = []
    for args in [("r1", "rejected", "bob"), ("r9", "accepted", "bob"), ("r2", "open", "bob")]:
        with pytest.raises(StoreError) as refused:
            store.decide(*args, T0 + 12, "")
        messages.append((refused.value.code, str(refused.value)))
    assert messages == [
        ("decided", "r1 was already accepted by alice"),
        ("not_found", "the inbox has no record r9"),
        ("bad_arguments", "a decision is accepted or rejected, not 'open'"),
    ]
    assert store.get("r1") == accepted


def test_concurrent_decisions_of_one_record_decide_it_once(site: Site) -> None:
    store = site.open()
    store.add(record("r1"), Caps())
    outcomes: list[str] = []

    def decide(n: int) -> None:
        try:
            store.decide("r1", "accepted", f"reviewer-{n}", T0 + n, "")
            outcomes.append("accepted")
        except StoreError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=decide, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert sorted(outcomes) == ["accepted"] + ["decided"] * 7


def test_the_events_trail_every_change_in_order(store: Store) -> None:
    store.add(record("r1"), Caps())
    store.add(record("r2", principal="agent-b", created_at=T0 + 1), Caps())
    store.add(record("r1"), Caps())  # a retry changes nothing
    store.decide("r2", "rejected", "alice", T0 + 5, "not reproducible")
    store.decide("r1", "accepted", "bob", T0 + 6, "")
    trail = list(store.events())
    assert [e.seq for e in trail] == sorted({e.seq for e in trail})
    assert [e._replace(seq=0) for e in trail] == [
        Event(0, "r1", "submitted", "agent-a", T0),
        Event(0, "r2", "submitted", "agent-b", T0 + 1),
        Event(0, "r2", "rejected", "alice", T0 + 5, "not reproducible"),
        Event(0, "r1", "accepted", "bob", T0 + 6, ""),
    ]
    check_consistent(store)


# -- schema ------------------------------------------------------------------------------


def test_migrations_are_applied_once_and_reopening_changes_nothing(site: Site) -> None:
    versions = list(range(1, len(MIGRATIONS) + 1))
    first = site.open()
    first.add(record("r1"), Caps())
    assert site.schema_versions() == versions
    first.close()
    again = site.open()
    assert site.schema_versions() == versions
    assert again.get("r1") == record("r1")
    again.close()


def test_replicas_starting_at_once_migrate_once(site: Site) -> None:
    errors: list[BaseException] = []
    stores: list[Store] = []
    start = threading.Barrier(6)

    def replica() -> None:
        start.wait()
        try:
            stores.append(site.open())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=replica) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for opened in stores:
        opened.close()
    assert errors == []
    assert site.schema_versions() == list(range(1, len(MIGRATIONS) + 1))


# -- an unreachable database -------------------------------------------------------------


def test_writes_answer_unavailable_while_the_database_is_unreachable(site: Site) -> None:
    store = site.open(timeout=1.0)
    store.add(record("r1"), Caps())
    with site.unreachable():
        for write in (
            lambda: store.add(record("r2"), Caps()),
            lambda: store.decide("r1", "accepted", "alice", T0 + 1, ""),
        ):
            with pytest.raises(StoreUnavailable) as refused:
                write()
            assert refused.value.code == "unavailable"
    deadline = time.monotonic() + 60  # the pool reconnects with a backoff of its own
    while True:
        try:
            assert store.add(record("r3"), Caps())[1]
            break
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert store.get("r2") is None
    assert store.get("r1").state == "open"  # type: ignore[union-attr]
    check_consistent(store)
    store.close()


def test_a_store_that_cannot_be_opened_is_unavailable(site: Site) -> None:
    if site.kind == "sqlite":
        spec = f"sqlite:{site.location}.missing/inbox.sqlite"
    else:
        assert site.server is not None
        spec = "postgres:" + site.location.replace(f"port={site.server.port}", "port=1")
    with pytest.raises(StoreUnavailable):
        open_store(spec, timeout=1.0)


def test_replicas_writing_at_once_never_overshoot_a_cap(site: Site) -> None:
    """Four stores on one database (as four replicas would hold), four threads each, all
    adding at once: one principal's hourly cap, then one doc's open cap, hold exactly."""
    replicas = [site.open() for _ in range(4)]
    caps = Caps(per_principal_per_hour=10, open_per_doc=7)
    codes: list[str] = []
    start = threading.Barrier(16)

    def write(n: int, store: Store) -> None:
        start.wait()
        for i in range(6):
            for stored in (
                record(f"p-{n}-{i}", principal="busy", doc=f"doc-{n}-{i}"),
                record(f"d-{n}-{i}", principal=f"agent-{n}-{i}", doc="crowded"),
            ):
                try:
                    store.add(stored, caps)
                    codes.append("added")
                except StoreError as exc:
                    codes.append(exc.code)

    threads = [threading.Thread(target=write, args=(n, replicas[n % 4])) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = check_consistent(replicas[0])
    for store in replicas:
        store.close()
    assert sum(r.principal == "busy" for r in records) == 10
    assert sum(r.doc == "crowded" for r in records) == 7
    assert sorted(set(codes)) == ["added", "rate_limited", "too_many_open"]
    assert codes.count("added") == 17
