"""Suggestions for an unknown id come from the sorted ids alone: never from parsing the
catalog, at least as often right as difflib over every id was (the suggestions before
issue 29) for typos, case and missing or extra parts, and bounded for hostile ids."""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PUBLIC, REAL_SITES, shared_data
from test_id_table import table_of

from handbook import Library
from handbook.handlers import suggestions
from handbook.handlers.suggestions import IdIndex

KINDS = ["device", "guide", "procedure", "protocol", "reference", "howto"]
VENDORS = ["acme", "voltra", "kestrel", "orbis", "omron", "beckhoff"]
WORDS = ["line", "controller", "pump", "valve", "sensor", "pressure", "reject", "bin"]
WORDS += ["changeover", "threading", "labeller", "api", "modbus", "mqtt", "night", "shift"]
_COMPACT = re.compile(r"[\W_]+")


def _library_ids(rng: random.Random, count: int) -> list[str]:
    def one() -> str:
        kind = rng.choice(KINDS)
        if kind == "device":
            model = rng.choice("abcdemx") + rng.choice("abcdelmrw") + str(rng.randrange(2, 900))
            return f"device.{rng.choice(VENDORS)}.{model}"
        return f"{kind}.{'-'.join(rng.sample(WORDS, rng.randrange(1, 4)))}"

    return sorted({one() for _ in range(count)})


def _variants(rng: random.Random, wanted: str) -> Iterator[tuple[str, str]]:
    at, c = rng.randrange(1, len(wanted) - 1), rng.choice("abcdefghijklmnopqrstuvwxyz")
    yield "typo", wanted[:at] + wanted[at + 1] + wanted[at] + wanted[at + 2 :]  # swapped
    yield "typo", wanted[:at] + wanted[at + 1 :]  # a letter left out
    yield "typo", wanted[:at] + c + wanted[at:]  # one too many
    yield "typo", wanted[:at] + c + wanted[at + 1 :]  # one wrong
    yield "case", wanted.upper() if rng.random() < 0.5 else wanted.title()
    yield "part", wanted.split(".", 1)[1]  # the kind left out
    yield "part", wanted + rng.choice(["s", "-manual", ".v2", "x"])


def _before(wanted: str, ids: list[str]) -> list[str]:
    """What suggestions were before: difflib over every id, and ids holding it."""
    lowered = wanted.strip().lower()
    key = _COMPACT.sub("", lowered)
    squeezed = [_COMPACT.sub("", i) for i in ids]
    same = [i for i, s in zip(ids, squeezed, strict=True) if s == key]
    close = difflib.get_close_matches(lowered, ids, n=5, cutoff=0.5)
    holding = [i for i, s in zip(ids, squeezed, strict=True) if key and (key in s or s in key)]
    return list(dict.fromkeys([*same, *close, *holding]))[:10]


def test_suggestions_are_right_at_least_as_often_as_difflib_over_every_id() -> None:
    rng = random.Random(29)
    ids = _library_ids(rng, 300)
    index = IdIndex(ids)
    squeezed = [_COMPACT.sub("", i) for i in ids]
    right: dict[str, list[int]] = {}
    for wanted in rng.sample(ids, 40):
        for kind, variant in _variants(rng, wanted):
            key = _COMPACT.sub("", variant.lower())
            if variant in ids or sum(key in s for s in squeezed) > 3:
                continue  # `modbus` for one of 30 ids ending in it: no list of 10 is wrong
            tally = right.setdefault(kind, [0, 0, 0])
            tally[0] += 1
            tally[1] += wanted in _before(variant, ids)
            tally[2] += wanted in index.suggest(variant)
    for kind, (tried, before, now) in right.items():
        assert now >= before, f"{kind}: right {now} of {tried} times, difflib {before}"
    assert right["typo"][2] >= 0.95 * right["typo"][0]
    assert right["case"][2] == right["case"][0]


@pytest.mark.parametrize(
    ("wanted", "first"),
    [
        ("device.acme.AC200", "device.acme.ac200"),  # case
        ("device-acme-ac200", "device.acme.ac200"),  # punctuation
        ("devcie.acme.ac200", "device.acme.ac200"),  # a typo at the start
        ("device.acme.ac2000", "device.acme.ac200"),  # one too many at the end
        ("acme.ac200", "device.acme.ac200"),  # the kind left out
        ("  guide.commisioning ", "guide.commissioning"),
    ],
)
def test_the_intended_id_comes_first(wanted: str, first: str) -> None:
    ids = ["device.acme.ac200", "device.acme.ac300", "device.voltra.em3", "guide.about"]
    ids += ["guide.commissioning", "protocol.modbus", "protocol.mqtt"]
    assert IdIndex(ids).suggest(wanted)[0] == first


def test_ids_holding_the_wanted_one_are_suggested_in_order() -> None:
    ids = [f"device.acme.ac{n}" for n in range(100, 130)] + ["guide.acme"]
    found = IdIndex(sorted(ids)).suggest("acme")
    assert len(found) == 10 and "guide.acme" in found


@pytest.mark.parametrize(
    "wanted",
    [
        "x" * 10_000,
        "device.acme.ac200" * 600,
        "\x00\x01\n\r\t" * 2000,
        "\ud800\udfff" * 100,  # lone surrogates, as a JSON body can hold
        "дев.акме" * 1000,
        "",
        "...",
        "\n",
    ],
)
def test_hostile_ids_cost_bounded_work(wanted: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """However long or odd the id, at most `MAX_WANTED` characters are looked at and at
    most twice `CANDIDATES` ids are compared with it."""
    ids = [*_library_ids(random.Random(1), 2000), "device.acme.ac200"]
    index = IdIndex(sorted(ids))
    compared: list[int] = []
    original = suggestions._closest

    def counting(key: bytes, candidates: list[bytes]) -> list[int]:
        assert len(key) <= 4 * suggestions.MAX_WANTED  # UTF-8 bytes of at most 200 characters
        compared.append(len(candidates))
        return original(key, candidates)

    monkeypatch.setattr(suggestions, "_closest", counting)
    found = index.suggest(wanted)
    assert len(found) <= suggestions.LIMIT and set(found) <= set(ids)
    assert sum(compared) <= 2 * suggestions.CANDIDATES
    if wanted.startswith("device.acme.ac200"):
        assert found[0] == "device.acme.ac200"


def test_an_id_holding_a_line_break_does_not_shift_the_others() -> None:
    index = IdIndex(["alpha.one", "beta\ngamma", "delta.two"])
    assert index.suggest("delta.tow")[0] == "delta.two"
    assert index.suggest("beta.gamma") == ["beta\ngamma"]


def test_an_unknown_id_reads_neither_the_catalog_nor_its_entries(
    plant_floor_bundle: Path,
) -> None:
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    answer = lib.get("device.acme.ac-2000")
    assert answer["found"] is False and answer["suggestions"][0] == "device.acme.ac200"
    assert lib.bundle._catalog is None and lib.bundle._entries is None
    assert "catalog.json" not in lib.bundle._core  # not even read and hashed
    whole = Library.open(plant_floor_bundle, [PUBLIC])
    whole.bundle.catalog  # noqa: B018
    assert whole.get("device.acme.ac-2000") == answer


def test_every_line_found_is_numbered_as_its_id() -> None:
    """Lines are numbered by counting line breaks (no table of starts): ids that squeeze
    to nothing, to the same line, or hold only punctuation keep every later id's number."""
    rng = random.Random(7)
    pieces = ["a", "b", "ab", "-", "--", "A-B", "a.b", "b_a", "é", ".", "ba"]
    for _ in range(300):
        ids = sorted({"".join(rng.choices(pieces, k=rng.randint(1, 3))) for _ in range(12)})
        index = IdIndex(ids)
        for needle, anchor in ((b"a", 0), (b"\nb", 1), (b"a\n", 0), (b"\nab\n", 1)):
            found = list(index._find(needle, anchor, limit=len(ids)))
            expected = [
                n
                for n, line in enumerate(suggestions.squeeze(i) for i in ids)
                if needle in b"\n" + line + b"\n"
            ]
            assert [n for n, _ in found] == expected, (ids, needle)
            assert all(line == suggestions.squeeze(ids[n]) for n, line in found)


# -- the same suggestions as the line search before ids.bin ---------------------------------


class _LineSearch:
    """The suggestions before ids.bin (issue 29's second stop), kept as the reference:
    every anchor found by substring searches of the squeezed lines, in C. The index that
    bisects ids.bin's orders must suggest exactly what this suggests."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        joined = "\n".join(i.replace("\n", " ") for i in ids)
        self.text = b"\n" + suggestions.squeeze(joined) + b"\n"

    def suggest(self, wanted: str) -> list[str]:
        key = suggestions.squeeze(wanted.strip()[: suggestions.MAX_WANTED]).replace(b"\n", b"")
        if not key or not self.ids:
            return []
        same = [self.ids[n] for n, _ in self._find(b"\n" + key + b"\n", 1, suggestions.LIMIT)]
        containing = [self.ids[n] for n, _ in self._find(key, 0, suggestions.LIMIT)]
        candidates = dict(self._anchored(key, start=True))
        candidates.update(self._anchored(key, start=False))
        order, lines = list(candidates), list(candidates.values())
        close = [self.ids[order[n]] for n in suggestions._closest(key, lines)]
        held = [self.ids[n] for n, line in candidates.items() if line in key]
        return list(dict.fromkeys([*same, *close, *containing, *held]))[: suggestions.LIMIT]

    def _anchored(self, key: bytes, start: bool) -> list[tuple[int, bytes]]:
        def part(length: int) -> bytes:
            return b"\n" + key[:length] if start else key[len(key) - length :] + b"\n"

        low, high = 0, len(key)
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if part(mid) in self.text else (low, mid - 1)
        shortest = min(suggestions.MIN_ANCHOR, len(key))
        if low < shortest:
            return []
        found: dict[int, bytes] = {}
        for length in range(low, max(shortest, low - suggestions.SLACK) - 1, -1):
            if len(found) >= suggestions.CANDIDATES:
                break
            found.update(self._find(part(length), 1 if start else 0, suggestions.POOL))
        by_length = sorted(found.items(), key=lambda item: abs(len(item[1]) - len(key)))
        return by_length[: suggestions.CANDIDATES]

    def _find(self, needle: bytes, anchor: int, limit: int) -> Iterator[tuple[int, bytes]]:
        text = self.text
        at, found, last, line, counted = 0, 0, -1, -1, 0
        while found < limit:
            at = text.find(needle, at)
            if at < 0:
                return
            begin = text.rfind(b"\n", 0, at + anchor + 1)
            line += text.count(b"\n", counted, begin + 1)
            counted = begin + 1
            at += 1
            if line != last and 0 <= line < len(self.ids):
                found, last = found + 1, line
                yield line, text[begin + 1 : text.find(b"\n", begin + 1)]


HOSTILE = ["x" * 10_000, "\x00\x07\n" * 3000, "дев." * 2500, "", "...", "\n", "\ud800ab"]
HOSTILE += ["é" * 300, "a", "ab", "-a-", "acme", "device", "ac200" * 50]


def _misses(rng: random.Random, ids: list[str], count: int) -> Iterator[str]:
    """Near misses of `ids` (typos, case, parts left out or added, a cut, a long repeat)
    and hostile ids."""
    yield from HOSTILE
    for wanted in rng.sample(ids, min(count, len(ids))):
        if len(wanted) < 3:
            yield wanted.upper()
            continue
        if "." in wanted.strip(".")[1:-1]:
            yield from (variant for _, variant in _variants(rng, wanted))
        yield wanted[: rng.randrange(1, len(wanted))]
        yield wanted[rng.randrange(1, len(wanted)) :]
        yield wanted * 40
        yield "\x00" + wanted.replace(".", " ") + "\n"


def _assert_same_as_before(ids: list[str], misses: Iterator[str]) -> int:
    """Both the index made in memory and the one read from ids.bin suggest exactly what
    the line search did; the number of ids compared."""
    before, memory = _LineSearch(ids), IdIndex(ids)
    from_file = IdIndex(table_of(ids))
    compared = 0
    for wanted in misses:
        expected = before.suggest(wanted)
        assert memory.suggest(wanted) == expected, (wanted[:80], ids[:5])
        assert from_file.suggest(wanted) == expected, (wanted[:80], ids[:5])
        compared += 1
    return compared


def test_suggestions_are_those_of_the_line_search_before() -> None:
    rng = random.Random(2929)
    ids = _library_ids(rng, 1500)
    assert _assert_same_as_before(ids, _misses(rng, ids, 60)) > 400


def test_odd_ids_are_suggested_as_before() -> None:
    """Ids that squeeze to nothing or to the same line, repeated (once per language),
    non-ASCII, holding a line break; tiny libraries."""
    rng = random.Random(11)
    pieces = ["a", "b", "ab", "-", "--", "A-B", "a.b", "b_a", "é", ".", "ba", "abc", "x\ny"]
    for size in (1, 2, 3, 12, 40):
        for _ in range(25):
            ids = sorted("".join(rng.choices(pieces, k=rng.randint(1, 4))) for _ in range(size))
            _assert_same_as_before(ids, _misses(rng, ids, 5))


def test_real_site_ids_are_suggested_as_before() -> None:
    """Ids made from the pages of real documentation sites, as an adopted site makes them."""
    root = shared_data(REAL_SITES)
    ids = sorted(
        {
            re.sub(
                r"[^a-z0-9_.-]+",
                "-",
                p.relative_to(root).with_suffix("").as_posix().lower().replace("/", "."),
            ).strip(".-")
            for p in root.rglob("*.md")
        }
        - {""}
    )
    assert len(ids) > 100
    assert _assert_same_as_before(ids, _misses(random.Random(3), ids, 100)) > 500
