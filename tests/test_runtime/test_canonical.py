"""Canonical JSON (RFC 8785 restricted to integers), its strict reader and the manifest profile.

Signed bytes must have exactly one accepted encoding: if two byte strings could parse to
the same payload, a signature check and a hash check could disagree about what was signed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from handbook.bundle import canonical, manifest
from handbook.bundle.canonical import MAX_DEPTH, MAX_SAFE_INTEGER, CanonicalError
from handbook.errors import BundleError, FormatError

WHAT = "thing.json"
BIG = 1 << 20


def load(data: bytes, max_bytes: int = BIG) -> Any:
    return canonical.loads(data, what=WHAT, max_bytes=max_bytes)


def nested_lists(depth: int, leaf: list[Any] | int | None = None) -> Any:
    """`depth` nested lists; the innermost holds `leaf` (or is empty)."""
    value: Any = [] if leaf is None else [leaf]
    for _ in range(depth - 1):
        value = [value]
    return value


def nested_dicts(depth: int) -> Any:
    """`depth` nested objects, the innermost empty."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


# -- dumps ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, b"null"),
        (True, b"true"),
        (False, b"false"),
        (0, b"0"),
        (-1, b"-1"),
        (MAX_SAFE_INTEGER, b"9007199254740991"),
        (-MAX_SAFE_INTEGER, b"-9007199254740991"),
        ("", b'""'),
        ([], b"[]"),
        ({}, b"{}"),
        ((1, "a"), b'[1,"a"]'),
        ([1, [2, [3, []]], {"k": [None]}], b'[1,[2,[3,[]]],{"k":[null]}]'),
        (
            {"b": [True, False], "a": {"d": 1, "c": None}},
            b'{"a":{"c":null,"d":1},"b":[true,false]}',
        ),
    ],
)
def test_dumps_scalars_and_containers(value: Any, expected: bytes) -> None:
    """No whitespace anywhere, literals lower case, tuples encode as arrays."""
    assert canonical.dumps(value) == expected


def test_dumps_rfc8785_sorting_example() -> None:
    """RFC 8785 §3.2.3: keys sort by UTF-16 code units, so U+1F600 (surrogate D83D)
    comes before U+FB33 although its code point is larger."""
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    expected = (
        b'{"\\r":"Carriage Return",'
        b'"1":"One",'
        b'"\xc2\x80":"Control",'
        b'"\xc3\xb6":"Latin Small Letter O With Diaeresis",'
        b'"\xe2\x82\xac":"Euro Sign",'
        b'"\xf0\x9f\x98\x80":"Emoji: Grinning Face",'
        b'"\xef\xac\xb3":"Hebrew Letter Dalet With Dagesh"}'
    )
    assert canonical.dumps(value) == expected


def test_dumps_rfc8785_string_example() -> None:
    """RFC 8785 §3.2.2.2's example without its (float) numbers, byte for byte."""
    source = '{"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
    value = json.loads(source)
    expected = (
        b'{"literals":[null,true,false],"string":"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical.dumps(value) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("\U0001f600", "\uffff"),  # astral (D83D DE00) sorts before U+FFFF in UTF-16
        ("\U00010000", "\ue000"),  # D800 DC00 < E000, although 0x10000 > 0xE000
        ("\U0010ffff", "\ufffd"),  # DBFF DFFF < FFFD
        ("a", "b"),
        ("a", "aa"),  # a prefix sorts first
        ("A", "a"),  # case-sensitive, by code unit
        ("\u00e9", "\u0100"),
    ],
)
def test_dumps_orders_keys_by_utf16_code_units(first: str, second: str) -> None:
    """Code-point order and UTF-16 order differ above U+FFFF; JCS wants UTF-16."""
    expected = (
        b"{"
        + json.dumps(first, ensure_ascii=False).encode()
        + b":1,"
        + json.dumps(second, ensure_ascii=False).encode()
        + b":2}"
    )
    assert canonical.dumps({second: 2, first: 1}) == expected
    assert canonical.dumps({first: 1, second: 2}) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x00", b'"\\u0000"'),
        ("\x01", b'"\\u0001"'),
        ("\x08", b'"\\b"'),
        ("\t", b'"\\t"'),
        ("\n", b'"\\n"'),
        ("\x0b", b'"\\u000b"'),
        ("\x0c", b'"\\f"'),
        ("\r", b'"\\r"'),
        ("\x1a", b'"\\u001a"'),  # lowercase hex
        ("\x1f", b'"\\u001f"'),
        ('"', b'"\\""'),
        ("\\", b'"\\\\"'),
        ("/", b'"/"'),  # solidus is not escaped
        ("\x7f", b'"\x7f"'),  # DEL is not a JSON control character
        ("\u0080", b'"\xc2\x80"'),
        ("\u00e9", b'"\xc3\xa9"'),
        ("\u2028", b'"\xe2\x80\xa8"'),  # literal, unlike JavaScript-safe encoders
        ("\u2029", b'"\xe2\x80\xa9"'),
        ("\ufeff", b'"\xef\xbb\xbf"'),
        ("\U0001f600", b'"\xf0\x9f\x98\x80"'),
        ('a\tb"c\\d\u00e9', b'"a\\tb\\"c\\\\d\xc3\xa9"'),
    ],
)
def test_dumps_escapes_strings_as_jcs(text: str, expected: bytes) -> None:
    """Only `"`, `\\` and C0 controls are escaped; short forms where JSON has them."""
    assert canonical.dumps(text) == expected
    assert canonical.dumps({text: text}) == b"{" + expected + b":" + expected + b"}"


@pytest.mark.parametrize(
    "value",
    [
        MAX_SAFE_INTEGER + 1,
        -MAX_SAFE_INTEGER - 1,
        2**64,
        -(2**63),
        [1, 2**53],
        {"a": {"b": 2**53}},
    ],
)
def test_dumps_refuses_integers_beyond_safe_range(value: Any) -> None:
    """Beyond ±(2^53-1) other JCS implementations lose precision."""
    with pytest.raises(CanonicalError, match="outside"):
        canonical.dumps(value)


@pytest.mark.parametrize(
    "value", [0.0, 1.0, -0.5, 1e2, float("nan"), float("inf"), [1, 2.5], {"a": 1.0}]
)
def test_dumps_refuses_floats(value: Any) -> None:
    """No floats anywhere, so nobody has to agree on number formatting."""
    with pytest.raises(CanonicalError, match="float"):
        canonical.dumps(value)


@pytest.mark.parametrize(
    "value", ["\ud800", "a\udfffb", ["\udc00"], {"k": "\ud83d"}, {"\ud800": 1}]
)
def test_dumps_refuses_lone_surrogates(value: Any) -> None:
    """A lone surrogate has no UTF-8 encoding."""
    with pytest.raises(CanonicalError, match="surrogate"):
        canonical.dumps(value)


@pytest.mark.parametrize("value", [{1: "a"}, {None: 1}, {("a",): 1}, b"bytes", {1, 2}, object()])
def test_dumps_refuses_values_without_json_form(value: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical.dumps(value)


def test_canonical_error_is_a_value_error() -> None:
    """Callers that catch ValueError for bad input still catch it."""
    assert issubclass(CanonicalError, ValueError)


# -- loads: refusals ------------------------------------------------------------------------


def test_loads_checks_size_before_parsing() -> None:
    """Oversized input is refused without being decoded: the message is about the size,
    not about the invalid UTF-8 the bytes also hold."""
    data = b"\xff" * 11
    with pytest.raises(FormatError, match=r"^thing\.json: 11 bytes is over the 10-byte limit"):
        load(data, max_bytes=10)


def test_loads_size_limit_is_inclusive() -> None:
    assert load(b'"12345678"', max_bytes=10) == "12345678"
    with pytest.raises(FormatError, match="limit"):
        load(b'"123456789"', max_bytes=10)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\xef\xbb\xbf{}", "BOM"),
        (b"\xef\xbb\xbf[1]", "BOM"),
        (b'"\xff"', "not UTF-8"),
        (b'"\xc3"', "not UTF-8"),
        (b'"\xc0\xaf"', "not UTF-8"),  # overlong "/"
        (b'"\xed\xa0\x80"', "not UTF-8"),  # UTF-8-encoded surrogate (CESU)
        (b'{"a":1,"a":1}', "duplicate key"),
        (b'{"a":1,"b":{"c":1,"c":2}}', "duplicate key"),
        (b"{ }", "not canonical"),
        (b'{"a": 1}', "not canonical"),
        (b'{"a":1 }', "not canonical"),
        (b"[1, 2]", "not canonical"),
        (b" 1", "not canonical"),
        (b"{}\n", "not canonical"),
        (b"\t[]", "not canonical"),
        (b'{"b":1,"a":2}', "not canonical"),
        # code-point order, not UTF-16 order
        (b'{"\xef\xac\xb3":1,"\xf0\x9f\x98\x80":2}', "not canonical"),
        (b"NaN", "NaN"),
        (b"[Infinity]", "Infinity"),
        (b'{"a":-Infinity}', "Infinity"),
        (b"1.0", "float"),
        (b"1e2", "float"),
        (b"1E2", "float"),
        (b"-0.0", "float"),
        (b"[0.5]", "float"),
        (b"1e-2", "float"),
        (b"-0", "not canonical"),
        (b"01", "not strict JSON"),
        (b"+1", "not strict JSON"),
        (b"9007199254740992", "outside"),
        (b"-9007199254740992", "outside"),
        (b"[18446744073709551616]", "outside"),
        (b'"\\u0041"', "not canonical"),
        (b'"\\/"', "not canonical"),
        (b'"\\u00e9"', "not canonical"),
        (b'"\\u001F"', "not canonical"),  # uppercase hex
        (b'"\\u0009"', "not canonical"),  # \t has a short form
        (b'"\\u2028"', "not canonical"),
        (b'"\\ud83d\\ude00"', "not canonical"),  # a valid pair, but escaped
        (b'{"\\u0061":1}', "not canonical"),
        (b'"\\ud800"', "surrogate"),
        (b'"\\udc00"', "surrogate"),
        (b'"a\\ude00b"', "surrogate"),
        (b'{"\\ud800":1}', "surrogate"),
        (b'"\x01"', "not strict JSON"),  # raw control character
        (b"'a'", "not strict JSON"),
        (b"[1,]", "not strict JSON"),
        (b"", "not strict JSON"),
        (b"[1][2]", "not strict JSON"),
        (b"True", "not strict JSON"),
    ],
)
def test_loads_refuses(data: bytes, fragment: str) -> None:
    """Every non-canonical or non-strict input is a FormatError naming the file."""
    with pytest.raises(FormatError) as info:
        load(data)
    message = str(info.value)
    assert message.startswith(f"{WHAT}: ")
    assert fragment in message


def test_format_error_is_a_bundle_error() -> None:
    """The CLI maps BundleError to exit 1; a bad manifest must land there."""
    assert issubclass(FormatError, BundleError)


@pytest.mark.parametrize("make", [nested_lists, nested_dicts])
def test_loads_depth_limit_on_containers(make: Any) -> None:
    """MAX_DEPTH nested containers are fine; one more is refused."""
    assert load(canonical.dumps(make(MAX_DEPTH))) == make(MAX_DEPTH)
    with pytest.raises(FormatError, match=rf"^thing\.json: nested deeper than {MAX_DEPTH} levels"):
        load(canonical.dumps(make(MAX_DEPTH + 1)))


def test_loads_depth_limit_does_not_count_scalar_leaves() -> None:
    """The limit is on nesting of containers; whether the innermost one is empty must not matter."""
    value = nested_lists(MAX_DEPTH, leaf=0)
    assert load(canonical.dumps(value)) == value


def test_loads_refuses_pathologically_deep_input() -> None:
    """Deep enough to overflow the parser's recursion: still a FormatError, not a crash."""
    data = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(FormatError, match=r"^thing\.json: "):
        load(data)


# -- loads: acceptance ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        MAX_SAFE_INTEGER,
        -MAX_SAFE_INTEGER,
        "",
        '\u2028\x7f\U0001f600\x00\n"\\/',
        [],
        {},
        [1, [2, [3]], {"k": None}],
        {"\U0001f600": 1, "\ufb33": 2, "\r": 3, "1": 4, "\u0080": 5},
        {"signed": {"files": {"a/b.md": {"bytes": 3, "sha256": "0" * 64}}}, "signatures": []},
    ],
)
def test_loads_round_trips_canonical_bytes(value: Any) -> None:
    """Canonical bytes parse back to the value, and the value re-encodes to the same bytes."""
    data = canonical.dumps(value)
    parsed = load(data)
    assert parsed == value
    assert canonical.dumps(parsed) == data


def test_loads_accepts_rfc8785_output() -> None:
    """The canonical form of RFC 8785's string example is accepted; its pretty source is not."""
    canonical_bytes = (
        b'{"literals":[null,true,false],"string":"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert load(canonical_bytes) == {
        "literals": [None, True, False],
        "string": '\u20ac$\x0f\nA\'B"\\\\"/',
    }
    pretty = b'{"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
    with pytest.raises(FormatError, match="not canonical"):
        load(pretty)


# -- check_profile --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"caf\u00e9": 1}, "is not ASCII"),
        ({"a": {"\U0001f600": 1}}, "is not ASCII"),
        ([{"\u0080": None}], "is not ASCII"),
        (-1, "outside [0, 2^53-1]"),
        ({"a": [0, -5]}, "outside [0, 2^53-1]"),
        (MAX_SAFE_INTEGER + 1, "outside [0, 2^53-1]"),
        ("e\u0301", "not NFC-normalized"),
        ({"a": ["ok", "A\u030a"]}, "not NFC-normalized"),
        ("\u212b", "not NFC-normalized"),  # ANGSTROM SIGN normalizes to U+00C5
    ],
)
def test_check_profile_refuses(value: Any, fragment: str) -> None:
    """Signed manifests use a tighter profile than JCS: ASCII keys, unsigned ints, NFC."""
    with pytest.raises(FormatError) as info:
        canonical.check_profile(value, WHAT)
    assert str(info.value).startswith(f"{WHAT}: ")
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,  # bools are not integers here
        0,
        MAX_SAFE_INTEGER,
        "\u00e9",  # precomposed: NFC
        "\u00c5\U0001f600 plain",
        {"key": ["caf\u00e9", 1, None, {"n": 0}]},
    ],
)
def test_check_profile_accepts(value: Any) -> None:
    canonical.check_profile(value, WHAT)


# -- manifest.Manifest.from_bytes on canonical but invalid manifests ------------------------

SHA = "0123456789abcdef" * 4


def good_manifest() -> dict[str, Any]:
    return {
        "signed": {
            "spec": "handbook/v2",
            "library": "lib",
            "version": "1.0.0",
            "built_at": "2026-01-31T12:00:00Z",
            "files": {
                "catalog.json": {"sha256": SHA, "bytes": 10},
                "search.bin": {"sha256": SHA, "bytes": 0},
            },
            "docs": 1,
        },
        "signatures": [{"keyid": SHA, "sig": "AAAA"}],
    }


def with_file(path: str) -> dict[str, Any]:
    value = good_manifest()
    value["signed"]["files"][path] = {"sha256": SHA, "bytes": 1}
    return value


@pytest.mark.parametrize(
    "path",
    [
        f"content/{SHA}.md",
        f"content/{SHA.upper()}.md",
        f"content/{'g' * 64}.md",
        "content/x.md",
        f"resources/{SHA}",
        f"Content/{SHA}.md",
        "RESOURCES/a/b",
    ],
)
def test_content_folder_paths_are_refused(path: str) -> None:
    """handbook/v2: the content folders belong to the catalog, so a manifest listing any
    path in them (case-folded, as a case-insensitive disk would) is not a v2 manifest."""
    with pytest.raises(FormatError, match="manifests do not list") as caught:
        manifest.Manifest.from_bytes(canonical.dumps(with_file(path)))
    assert repr(path) in str(caught.value)


def test_good_manifest_is_accepted() -> None:
    """The baseline every refusal below differs from in exactly one property."""
    parsed = manifest.Manifest.from_bytes(canonical.dumps(good_manifest()))
    assert parsed.to_dict() == good_manifest()
    assert parsed.to_bytes() == canonical.dumps(good_manifest())


def _mutate(change: Any) -> dict[str, Any]:
    value = good_manifest()
    change(value)
    return value


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (_mutate(lambda m: m.update(extra=1)), "unknown keys ['extra']"),
        (_mutate(lambda m: m.pop("signatures")), "missing keys ['signatures']"),
        (_mutate(lambda m: m["signed"].pop("docs")), "missing keys ['docs']"),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(mode=1)),
            "unknown keys ['mode']",
        ),
        (_mutate(lambda m: m["signatures"][0].update(extra="x")), "unknown keys ['extra']"),
        (_mutate(lambda m: m["signed"].update(spec="handbook/v3")), "spec is 'handbook/v3'"),
        (_mutate(lambda m: m["signed"].update(spec="handbook/v1")), "rebuild it with this release"),
        (_mutate(lambda m: m["signed"].update(built_at="2026-01-31 12:00:00")), "signed.built_at"),
        (_mutate(lambda m: m["signed"].update(expires="tomorrow")), "signed.expires"),
        (_mutate(lambda m: m["signed"].update(docs="1")), "signed.docs must be int"),
        (_mutate(lambda m: m["signed"].update(docs=True)), "signed.docs must be int"),
        (_mutate(lambda m: m["signed"].update(library=1)), "signed.library must be str"),
        (_mutate(lambda m: m["signed"].update(files=[])), "signed.files must be dict"),
        (_mutate(lambda m: m.update(signed=[])), "signed must be an object"),
        (_mutate(lambda m: m.update(signatures={})), "signatures must be list"),
        (
            _mutate(lambda m: m["signatures"][0].update(keyid="AB" * 32)),
            "signatures[0] needs a hex keyid",
        ),
        (_mutate(lambda m: m["signatures"][0].update(sig=1)), "signatures[0] needs a hex keyid"),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=SHA.upper())),
            "sha256 must be 64 lowercase hex",
        ),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=SHA[:-1])),
            "sha256 must be 64 lowercase hex",
        ),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=SHA[:-1] + "g")),
            "sha256 must be 64 lowercase hex",
        ),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=SHA + "0")),
            "sha256 must be 64 lowercase hex",
        ),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=1)),
            "sha256 must be 64 lowercase hex",
        ),
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(bytes="10")),
            "bytes must be int",
        ),
        (
            _mutate(
                lambda m: m["signed"]["files"]["catalog.json"].update(
                    sha256=SHA[:30] + " " + SHA[31:]
                )
            ),
            "sha256 must be 64 lowercase hex",
        ),
        # paths are checked in bulk; each bad one is still named
        (with_file(f"extra/{SHA[:-2]}:.md"), "holds a backslash, colon"),
        (
            _mutate(
                lambda m: m["signed"]["files"].update(
                    {
                        f"extra/{SHA}.md": {"sha256": SHA, "bytes": 1},
                        f"extra/{SHA.upper()}.md": {"sha256": SHA, "bytes": 1},
                    }
                )
            ),
            "differ only by case",
        ),
        (
            _mutate(
                lambda m: m["signed"]["files"].update(
                    {
                        f"extra/{SHA}.md": {"sha256": SHA, "bytes": 1},
                        f"EXTRA/{SHA}.md": {"sha256": SHA, "bytes": 1},
                    }
                )
            ),
            "differ only by case",
        ),
        # the profile, checked before the shape
        (
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(bytes=-1)),
            "outside [0, 2^53-1]",
        ),
        (_mutate(lambda m: m["signed"].update(docs=-1)), "outside [0, 2^53-1]"),
        (_mutate(lambda m: m["signed"].update(library="e\u0301")), "not NFC-normalized"),
        (_mutate(lambda m: m.update({"caf\u00e9": 1})), "is not ASCII"),
        ([], "manifest must be an object"),
        pytest.param(
            _mutate(lambda m: m["signed"]["files"]["catalog.json"].update(sha256=SHA + "\n")),
            "sha256 must be 64 lowercase hex",
            id="sha256-trailing-newline",
        ),
        pytest.param(
            _mutate(lambda m: m["signatures"][0].update(keyid=SHA + "\n")),
            "signatures[0] needs a hex keyid",
            id="keyid-trailing-newline",
        ),
        pytest.param(
            _mutate(lambda m: m["signed"].update(built_at="2026-01-31T12:00:00Z\n")),
            "signed.built_at",
            id="built_at-trailing-newline",
        ),
        pytest.param(
            _mutate(lambda m: m["signed"].update(expires="2026-01-31T12:00:00Z\n")),
            "signed.expires",
            id="expires-trailing-newline",
        ),
    ],
)
def test_manifest_refuses_bad_shape_or_profile(value: Any, fragment: str) -> None:
    """Canonical bytes are not enough: the payload must also fit the profile and the shape."""
    with pytest.raises(FormatError) as info:
        manifest.Manifest.from_bytes(canonical.dumps(value))
    assert str(info.value).startswith("manifest.json: ")
    assert fragment in str(info.value)


UNSAFE_PATHS = [
    "",
    "../x",
    "a/../x",
    "..",
    ".",
    "/abs",
    "/etc/passwd",
    "C:\\x",
    "c:x",
    "C:/x",
    "a\\b",
    "\\\\server\\share",
    "a//b",
    "a/",
    "a/./b",
    "./a",
    "x\u0000y",
    "x\ny",
    "x\x1fy",
    "x\x7fy",
    "a:b",
    "a*b",
    "a?b",
    'a"b',
    "a<b",
    "a>b",
    "a|b",
    "trailing.",
    "trailing ",
    "dir./x",
    "dir /x",
    "manifest.json",
]


@pytest.mark.parametrize("path", UNSAFE_PATHS)
def test_manifest_refuses_unsafe_file_paths(path: str) -> None:
    """A listed path must name one file, inside the bundle, on every system."""
    with pytest.raises(FormatError) as info:
        manifest.Manifest.from_bytes(canonical.dumps(with_file(path)))
    assert f"file path {path!r}" in str(info.value)


@pytest.mark.parametrize("path", ["e\u0301.md", "caf\u00e9.md", "dir/\u212b.md"])
def test_manifest_refuses_non_ascii_paths_by_profile(path: str) -> None:
    """Paths are object keys, so the ASCII-key profile refuses them (NFC or not) before
    the path check runs."""
    with pytest.raises(FormatError, match="is not ASCII"):
        manifest.Manifest.from_bytes(canonical.dumps(with_file(path)))


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("e\u0301.md", "is not NFC-normalized"),
        ("../x", "has an empty, '.' or '..' segment, or one ending in a dot or space"),
        ("/abs", "is empty or absolute"),
        ("C:\\x", "is empty or absolute"),
        ("a\\b", "holds a backslash, colon or control character"),
        ("a.", "has an empty, '.' or '..' segment, or one ending in a dot or space"),
        ("sub/CON.txt", "names a Windows device (con, nul, com1, …)"),
        ("x\u0085y", "holds a backslash, colon or control character"),
    ],
)
def test_check_path_reasons(path: str, problem: str) -> None:
    """check_path on its own, including NFC which the manifest profile pre-empts."""
    assert manifest.check_path(path) == problem


@pytest.mark.parametrize(
    "path",
    [
        "catalog.json",
        "content/abc.md",
        "a b/c.md",
        ".hidden",
        "a.b.c",
        "\u00e9.md",
        "manifest.json.bak",
    ],
)
def test_check_path_accepts(path: str) -> None:
    assert manifest.check_path(path) is None


@pytest.mark.parametrize(
    "path",
    ["catalog.json", "contents/abc.md", "a b/c-d_e.md", ".hidden", "a.b.c", "x/manifest.json"],
)
def test_manifest_accepts_safe_paths(path: str) -> None:
    parsed = manifest.Manifest.from_bytes(canonical.dumps(with_file(path)))
    assert path in parsed.signed.files


def test_manifest_refuses_non_canonical_bytes() -> None:
    """The same payload with whitespace is refused before any shape check."""
    data = json.dumps(good_manifest()).encode()
    with pytest.raises(FormatError, match="not canonical"):
        manifest.Manifest.from_bytes(data)
