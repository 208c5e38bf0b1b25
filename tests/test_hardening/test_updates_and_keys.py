"""Updates over HTTP and trusted keys, beyond tests/test_runtime/test_remote.py (rollback,
expiry, foreign, endless, slow), test_signing.py (the verify() policy unit by unit) and
test_vectors.py (golden bytes).

Against a real loopback HTTP server serving a dict of files:

- mix-and-match: one file of another version served inside a bundle is refused, naming
  it, and never enters the cache; files the server has but the manifest does not list
  are never requested, stored or served;
- the download cache and the state file fail closed: a poisoned or symlinked object is
  fetched again, a tampered assembled folder is rebuilt, an unreadable high-water file
  refuses, a redirect to file: is not followed;
- key rotation: trusting [old, new], a bundle by the new key loads; trusting [new], one
  by the old key is refused; the high-water mark is kept per set of trusted keys (the
  state file is read to check it);
- signatures in real manifests: a trusted key's signature under another tag, mangled
  signatures (truncated, extended, S+L), and with threshold 2 one key counted once
  however it is listed: twice, under two keyids, or as two *different* valid signatures
  (made here with other nonces, which Ed25519 verification must and does accept).

Finally a printed summary of the Wycheproof and CCTV vectors under the documented policy.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY as OLD_KEY
from conftest import ROOT, live, loopback_server, request

from handbook import (
    DownloadError,
    HashMismatchError,
    Library,
    RemoteLibrary,
    RollbackError,
    SignatureError,
)
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import MANIFEST, Manifest
from handbook.bundle.signing import (
    MANIFEST_TAG,
    TRUSTED_KEYS_ENV,
    PublicKey,
    b64encode,
    generate_private_key,
    load_private_key,
    public_key_of,
    sign,
    signing_input,
)
from handbook.bundle.trust import TrustPolicy
from handbook.bundle.web import url_problem
from handbook_build import load_config
from handbook_build.pipeline import build

OLD = public_key_of(OLD_KEY)
NEW_PEM, NEW = generate_private_key()
NEW_KEY = load_private_key(NEW_PEM)
EXAMPLE = ROOT / "examples" / "plant-floor"
LIBRARY = "plant-floor"
VECTORS = ROOT / "tests" / "vectors" / "ed25519"

Files = dict[str, bytes]


@pytest.fixture(autouse=True)
def _no_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)


def files_of(folder: Path) -> Files:
    root = Path(os.path.realpath(folder))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def with_signatures(files: Files, *signatures: dict[str, str]) -> Files:
    """The bundle's files with its manifest signed by exactly these entries."""
    manifest = Manifest.from_bytes(files[MANIFEST])
    return {**files, MANIFEST: Manifest(manifest.signed, signatures).to_bytes()}


def signed_payload(files: Files) -> dict[str, Any]:
    return Manifest.from_bytes(files[MANIFEST]).signed.to_dict()


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Files]:
    """v4 and v5 by the old key (v5 with one doc changed, so a content file differs too),
    v6 by the new key, v6 signed by both."""
    base = tmp_path_factory.mktemp("updates")
    changed = base / "changed"
    shutil.copytree(EXAMPLE, changed, ignore=shutil.ignore_patterns("build"))
    mqtt = changed / "docs" / "protocols" / "mqtt.md"
    mqtt.write_text(
        mqtt.read_text(encoding="utf-8") + "\nOne more line in version 5.\n", encoding="utf-8"
    )
    made: dict[str, Files] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(TRUSTED_KEYS_ENV, raising=False)
        for name, source, version, key in [
            ("v4", EXAMPLE, "4.0.0", OLD_KEY),
            ("v5", changed, "5.0.0", OLD_KEY),
            ("v6-new", EXAMPLE, "6.0.0", NEW_KEY),
        ]:
            build(
                dataclasses.replace(load_config(source / "mkdocs.yml"), version=version),
                base / name,
                key,
            )
            made[name] = files_of(base / name)
    new_sig = Manifest.from_bytes(made["v6-new"][MANIFEST]).signatures[0]
    made["v6-both"] = with_signatures(
        made["v6-new"], sign(OLD_KEY, MANIFEST_TAG, signed_payload(made["v6-new"])), new_sig
    )
    return made


class Handler(BaseHTTPRequestHandler):
    """GET /<bundle>/<file> from `routes`; a bytes value is served, a str is a redirect."""

    routes: ClassVar[dict[str, bytes | str]] = {}
    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        answer = self.routes.get(self.path)
        if answer is None:
            self.send_error(404)
        elif isinstance(answer, str):
            self.send_response(302)
            self.send_header("Location", answer)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)


class Server:
    def __init__(self, url: str, handler: type[Handler]) -> None:
        self.url, self.handler = url, handler

    def publish(self, name: str, files: Files) -> str:
        """Serve `files` under /<name>/; the bundle's URL."""
        for path in [p for p in self.handler.routes if p.startswith(f"/{name}/")]:
            del self.handler.routes[path]
        self.handler.routes.update({f"/{name}/{path}": data for path, data in files.items()})
        return f"{self.url}/{name}"

    def requests_for(self, name: str) -> list[str]:
        """The paths asked for under `name`, but for the reader's one probe of
        `objects/<sha256>` (this server publishes the plain layout only: 404)."""
        seen = [p.removeprefix(f"/{name}/") for p in self.handler.seen if p.startswith(f"/{name}/")]
        probes = [p for p in seen if p.startswith("objects/")]
        assert len(probes) <= 1, probes
        return [p for p in seen if p not in probes]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One server for the module; each test publishes under names of its own."""
    handler = type("FilesHandler", (Handler,), {"routes": {}, "seen": []})
    with loopback_server(handler) as url:
        yield Server(url, handler)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"cache_dir": tmp_path / "cache", "state_dir": tmp_path / "state"}


def fetch(
    url: str,
    dirs: dict[str, Path],
    keys: list[PublicKey] | None = None,
    *,
    state: str | None = None,
    **options: Any,
) -> Library:
    """Library.open(url), eager (every file fetched and verified first); `state` names a
    state folder of its own (a fresh version mark)."""
    where = dict(dirs, state_dir=dirs["state_dir"].with_name(f"state-{state}")) if state else dirs
    options.setdefault("lazy", False)
    return Library.open(
        url, [str(k) for k in (keys if keys is not None else [OLD])], **where, **options
    )


def marks(dirs: dict[str, Path]) -> dict[str, Any]:
    path = dirs["state_dir"] / "highwater.json"
    return json.loads(path.read_text()) if path.exists() else {}


def mark_key(*keys: PublicKey) -> str:
    """The state file's key for a set of trusted keys, as documented in handbook.bundle.remote."""
    keyset = ",".join(sorted(k.keyid for k in keys))
    return f"{LIBRARY}|{hashlib.sha256(keyset.encode()).hexdigest()[:32]}"


# -- mix-and-match, unlisted files ---------------------------------------------------------------


def test_a_file_of_another_version_is_refused_naming_it(
    server: Server, bundles: dict[str, Files], tmp_path: Path
) -> None:
    """Every file that differs between v4 and v5 (catalog, indexes, llms.txt, a content
    file), served from v4 inside v5, is refused by name; the cache never holds it and no
    version mark is written."""
    v4, v5 = bundles["v4"], bundles["v5"]
    swaps = {
        name: v4[name] for name in v5 if name != MANIFEST and name in v4 and v4[name] != v5[name]
    }
    only4, only5 = sorted(set(v4) - set(v5)), sorted(set(v5) - set(v4))
    assert len(only4) == len(only5) == 1 and only5[0].startswith("content/")  # the changed doc
    swaps[only5[0]] = v4[only4[0]]
    assert {"catalog.json", "llms.txt"} <= set(swaps)
    for n, (name, old_bytes) in enumerate(sorted(swaps.items())):
        dirs = {"cache_dir": tmp_path / f"cache{n}", "state_dir": tmp_path / f"state{n}"}
        url = server.publish(f"mix{n}", {**v5, name: old_bytes})
        with pytest.raises(HashMismatchError) as info:
            fetch(url, dirs)
        assert str(info.value).startswith(f"{name}: downloaded "), str(info.value)
        assert not (dirs["cache_dir"] / "objects" / hashlib.sha256(old_bytes).hexdigest()).exists()
        assert marks(dirs) == {}
    print(
        f"\nmix-and-match: {len(swaps)} files of v4 inside v5, each refused by name: {sorted(swaps)}"
    )


def test_unlisted_files_on_the_server_are_never_fetched_or_served(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    from handbook.serve.http import create_app

    extras = {
        "extra.txt": b"unlisted",
        "content/evil.md": b"# evil\n",
        "manifest.json.sig": b"x",
        "resources/deadbeef": b"x",
        "index.html": b"<script>evil</script>",
    }
    url = server.publish("v5x", {**bundles["v5"], **extras})
    lib = fetch(url, dirs)
    listed = set(lib.bundle.listing())  # the manifest's files and the content it vouches for
    assert sorted(server.requests_for("v5x")) == sorted([MANIFEST, *listed])
    assert set(files_of(lib.bundle.path)) == {MANIFEST, *listed}
    stored = {p.name for p in (dirs["cache_dir"] / "objects").iterdir()}
    assert not {hashlib.sha256(b).hexdigest() for b in extras.values()} & stored
    with live(create_app(lib)) as address:
        for name in extras:
            status, _, body = request(address, f"/bundle/{name}")
            assert status == 404 and body not in extras.values(), name
        assert request(address, "/bundle/catalog.json")[0] == 200


# -- the cache and the state file fail closed ---------------------------------------------------


def test_a_poisoned_or_symlinked_cache_object_is_fetched_again(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path], tmp_path: Path
) -> None:
    url = server.publish("v5", bundles["v5"])
    fetch(url, dirs)
    objects = dirs["cache_dir"] / "objects"
    catalog_sha = hashlib.sha256(bundles["v5"]["catalog.json"]).hexdigest()
    llms_sha = hashlib.sha256(bundles["v5"]["llms.txt"]).hexdigest()
    poisoned = objects / catalog_sha
    poisoned.write_bytes(poisoned.read_bytes().replace(b"plant", b"PLANT", 1))  # same size
    decoy = tmp_path / "decoy.txt"
    decoy.write_bytes(bundles["v5"]["llms.txt"])  # the right bytes, behind a link
    (objects / llms_sha).unlink()
    (objects / llms_sha).symlink_to(decoy)
    shutil.rmtree(dirs["cache_dir"] / "bundles")
    server.handler.seen.clear()
    lib = fetch(url, dirs)
    assert sorted(server.requests_for("v5")) == sorted([MANIFEST, "catalog.json", "llms.txt"])
    assert lib.bundle.read("catalog.json") == bundles["v5"]["catalog.json"]
    assert not (objects / llms_sha).is_symlink() and decoy.read_bytes() == bundles["v5"]["llms.txt"]


def test_a_tampered_assembled_folder_is_rebuilt(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    url = server.publish("v5", bundles["v5"])
    folder = fetch(url, dirs).bundle.path
    victim = next(p for p in sorted((folder / "content").iterdir()))
    victim.write_bytes(victim.read_bytes().replace(b"e", b"3", 1))
    (folder / "extra.txt").write_text("planted")
    lib = fetch(url, dirs)
    assert lib.bundle.path == folder
    assert set(files_of(folder)) == {MANIFEST, *lib.bundle.listing()}
    open_bundle(folder, [OLD])  # every hash holds again


def test_an_unreadable_high_water_file_refuses(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    url = server.publish("v5", bundles["v5"])
    dirs["state_dir"].mkdir(parents=True)
    state = dirs["state_dir"] / "highwater.json"
    state.write_text("{not json")
    with pytest.raises(RollbackError, match="unreadable"):
        fetch(url, dirs)
    assert state.read_text() == "{not json"  # left for a person to look at


@pytest.mark.parametrize("target", ["file:///etc/passwd", "file://{manifest}"])
def test_a_redirect_to_a_local_file_is_not_followed(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path], tmp_path: Path, target: str
) -> None:
    local = tmp_path / "manifest.json"
    local.write_bytes(bundles["v5"][MANIFEST])
    url = server.publish("redirect", {**bundles["v5"]})
    server.handler.routes["/redirect/manifest.json"] = target.format(manifest=local)
    with pytest.raises(DownloadError, match=r"manifest\.json: .*302"):
        fetch(url, dirs)


# -- key rotation --------------------------------------------------------------------------------


def test_rotation_trusting_old_and_new(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    v4, v6 = server.publish("v4", bundles["v4"]), server.publish("v6", bundles["v6-new"])
    with pytest.raises(SignatureError, match="0 valid signature"):
        fetch(v6, dirs, [OLD])  # before the client learns the new key
    lib = fetch(v6, dirs, [OLD, NEW])
    assert lib.status()["signed_by"] == [NEW.keyid] and lib.version == "6.0.0"
    with pytest.raises(RollbackError):
        fetch(v4, dirs, [NEW, OLD])  # the same set of keys, in another order: the same mark
    both = fetch(server.publish("v6b", bundles["v6-both"]), dirs, [OLD, NEW], state="both")
    assert both.status()["signed_by"] == [OLD.keyid, NEW.keyid]


def test_a_co_signature_added_later_is_another_bundle(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    """Documented behaviour ("one version must always be the same bundle"): the mark pins
    the whole manifest's hash, signatures included, so the same payload published again
    with one more signature (as during a rotation) needs a new version."""
    fetch(server.publish("v6", bundles["v6-new"]), dirs, [OLD, NEW])
    with pytest.raises(RollbackError, match=r"6\.0\.0 was already accepted with other contents"):
        fetch(server.publish("v6b", bundles["v6-both"]), dirs, [OLD, NEW])


def test_rotation_trusting_only_the_new_key(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    with pytest.raises(SignatureError, match="0 valid signature"):
        fetch(server.publish("v4", bundles["v4"]), dirs, [NEW])
    assert fetch(server.publish("v6", bundles["v6-new"]), dirs, [NEW]).version == "6.0.0"
    both = fetch(server.publish("v6b", bundles["v6-both"]), dirs, [NEW], state="both")
    assert both.status()["signed_by"] == [
        NEW.keyid
    ]  # the old key's signature is ignored, not counted
    assert marks(dirs).keys() == {mark_key(NEW)}


def test_the_mark_is_kept_per_set_of_trusted_keys(
    server: Server,
    bundles: dict[str, Files],
    dirs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Documented: "trusting other keys starts afresh". The state file holds one mark per
    (library, set of trusted keys); adding a key starts a new mark, so a client that
    rotates may accept, once, an older bundle than it had seen (see the report)."""
    v4, v5, v6 = (
        server.publish(n, bundles[b]) for n, b in [("v4", "v4"), ("v5", "v5"), ("v6", "v6-new")]
    )
    fetch(v5, dirs, [OLD])
    with pytest.raises(RollbackError, match=r"4\.0\.0 is older than 5\.0\.0"):
        fetch(v4, dirs, [OLD])
    assert {k: m["version"] for k, m in marks(dirs).items()} == {mark_key(OLD): "5.0.0"}

    assert fetch(v4, dirs, [OLD, NEW]).version == "4.0.0"  # a new key set: a fresh mark
    assert {k: m["version"] for k, m in marks(dirs).items()} == {
        mark_key(OLD): "5.0.0",
        mark_key(OLD, NEW): "4.0.0",
    }
    fetch(v6, dirs, [NEW, OLD])
    with pytest.raises(RollbackError, match=r"5\.0\.0 is older than 6\.0\.0"):
        fetch(v5, dirs, [OLD, NEW])
    monkeypatch.setenv(
        TRUSTED_KEYS_ENV, str(NEW)
    )  # keys from the environment belong to the set too
    with pytest.raises(RollbackError, match=r"older than 6\.0\.0"):
        fetch(v5, dirs, [OLD])
    monkeypatch.delenv(TRUSTED_KEYS_ENV)
    fetch(v6, dirs, [NEW])
    state = marks(dirs)
    assert {k: m["version"] for k, m in state.items()} == {
        mark_key(OLD): "5.0.0",
        mark_key(OLD, NEW): "6.0.0",
        mark_key(NEW): "6.0.0",
    }
    assert (
        state[mark_key(NEW)]["manifest_sha256"]
        == hashlib.sha256(bundles["v6-new"][MANIFEST]).hexdigest()
    )
    assert state[mark_key(NEW)]["source"] == v6


# -- signatures in real manifests -----------------------------------------------------------------

L = 2**252 + 27742317777372353535851937790883648493


def _malleate(sig: bytes, times: int = 1) -> bytes:
    return sig[:32] + (int.from_bytes(sig[32:], "little") + times * L).to_bytes(32, "little")


def _entry(key: PublicKey, sig: bytes) -> dict[str, str]:
    return {"keyid": key.keyid, "sig": b64encode(sig)}


def _good_sig(files: Files) -> bytes:
    return base64.b64decode(Manifest.from_bytes(files[MANIFEST]).signatures[0]["sig"])


def test_a_trusted_signature_for_another_purpose_is_refused(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path], tmp_path: Path
) -> None:
    """Domain separation in a real bundle: the trusted key's signature of this very payload
    under another tag, of the payload alone, or of tag + payload without the length
    prefix, is not a manifest signature. Over HTTP nothing but the manifest is fetched."""
    payload = signed_payload(bundles["v5"])
    body = Manifest.from_bytes(bundles["v5"][MANIFEST]).canonical_signed()
    forged = {
        "other tag": sign(OLD_KEY, "handbook/v1/other", payload),
        "no tag": _entry(OLD, OLD_KEY.sign(body)),
        "no length prefix": _entry(OLD, OLD_KEY.sign(MANIFEST_TAG.encode() + body)),
        "tag prefix": _entry(OLD, OLD_KEY.sign(signing_input("handbook/v1/manifes", payload))),
    }
    for n, (name, entry) in enumerate(forged.items()):
        files = with_signatures(bundles["v5"], entry)
        url = server.publish(f"tag{n}", files)
        with pytest.raises(SignatureError, match="0 valid signature"):
            fetch(url, dirs)
        assert server.requests_for(f"tag{n}") == [MANIFEST], name
        folder = tmp_path / f"local{n}"
        folder.mkdir()
        for path, data in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
        with pytest.raises(SignatureError):
            open_bundle(folder, [OLD])


MANGLED = {
    "truncated-63": lambda sig: sig[:63],
    "extended-65": lambda sig: sig + b"\x00",
    "extended-128": lambda sig: sig + sig,
    "S+L": _malleate,
    "S+2L": lambda sig: _malleate(sig, 2),
    "R-sign-bit": lambda sig: sig[:31] + bytes([sig[31] ^ 0x80]) + sig[32:],
    "zero": lambda sig: bytes(64),
    "identity-forgery": lambda sig: bytes([1]) + bytes(63),
}


def test_mangled_signatures_in_a_manifest_are_refused(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    """The unit policy of test_signing.py, through Manifest.from_bytes and fetch: alone,
    each mangled signature is refused; beside the good one, it is ignored, never counted."""
    good = _good_sig(bundles["v5"])
    for n, (name, mangle) in enumerate(MANGLED.items()):
        bad = mangle(good)
        assert bad != good
        with pytest.raises(SignatureError, match="0 valid signature"):
            fetch(server.publish(f"m{n}", with_signatures(bundles["v5"], _entry(OLD, bad))), dirs)
        lib = fetch(
            server.publish(
                f"m{n}", with_signatures(bundles["v5"], _entry(OLD, bad), _entry(OLD, good))
            ),
            dirs,
            state=str(n),
        )
        assert lib.status()["signed_by"] == [OLD.keyid], name


# A second, different, valid signature by the same key: Ed25519 verification accepts any
# nonce, so a signer (or anyone holding the key) can make many. Pure Python, test-only.

P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P
_Point = tuple[int, int, int, int]


def _add(a: _Point, b: _Point) -> _Point:
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa, bb = (y1 - x1) * (y2 - x2) % P, (y1 + x1) * (y2 + x2) % P
    cc, dd = 2 * t1 * t2 * D % P, 2 * z1 * z2 % P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return e * f % P, g * h % P, f * g % P, e * h % P


def _mul(scalar: int, point: _Point) -> _Point:
    result: _Point = (0, 1, 1, 0)
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _encode(point: _Point) -> bytes:
    x, y, z, _ = point
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _base() -> _Point:
    y = 4 * pow(5, P - 2, P) % P
    xx = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    x = pow(xx, (P + 3) // 8, P)
    if (x * x - xx) % P:
        x = x * pow(2, (P - 1) // 4, P) % P
    if x & 1:
        x = P - x
    return x, y, 1, x * y % P


def sign_with_nonce(private: Any, message: bytes, nonce: int) -> bytes:
    digest = hashlib.sha512(private.private_bytes_raw()).digest()
    a = int.from_bytes(digest[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    public = _encode(_mul(a, _base()))
    assert public == public_key_of(private).raw
    r = _encode(_mul(nonce % L, _base()))
    k = int.from_bytes(hashlib.sha512(r + public + message).digest(), "little") % L
    return r + ((nonce + k * a) % L).to_bytes(32, "little")


@pytest.fixture(scope="module")
def second_valid_sig(bundles: dict[str, Files]) -> bytes:
    message = signing_input(
        MANIFEST_TAG, None, encoded=Manifest.from_bytes(bundles["v5"][MANIFEST]).canonical_signed()
    )
    sig = sign_with_nonce(
        OLD_KEY, message, nonce=int.from_bytes(hashlib.sha256(b"another nonce").digest(), "little")
    )
    assert sig != _good_sig(bundles["v5"]) and OLD.verifies(sig, message)
    return sig


def test_threshold_two_counts_one_key_once(
    server: Server,
    bundles: dict[str, Files],
    dirs: dict[str, Path],
    second_valid_sig: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    v5 = bundles["v5"]
    good = _good_sig(v5)
    one_key = {
        "listed twice": [_entry(OLD, good), _entry(OLD, good)],
        "under two keyids": [_entry(OLD, good), _entry(NEW, good)],
        "two different valid signatures": [_entry(OLD, good), _entry(OLD, second_valid_sig)],
        "the other one under the other keyid": [_entry(OLD, good), _entry(NEW, second_valid_sig)],
        "a malleated copy": [_entry(OLD, good), _entry(OLD, _malleate(good))],
    }
    for n, (name, entries) in enumerate(one_key.items()):
        url = server.publish(f"t{n}", with_signatures(v5, *entries))
        with pytest.raises(
            SignatureError, match=r"1 valid signature\(s\) by trusted keys, 2 required"
        ):
            fetch(url, dirs, [OLD, NEW], threshold=2)
        assert server.requests_for(f"t{n}") == [MANIFEST], name
    url = server.publish("dup-trust", v5)
    for keys in ([OLD, OLD], [OLD, PublicKey.from_raw(OLD.raw)]):  # the same key trusted twice
        with pytest.raises(SignatureError, match="2 required"):
            fetch(url, dirs, keys, threshold=2)
    monkeypatch.setenv(TRUSTED_KEYS_ENV, str(OLD))
    with pytest.raises(SignatureError, match="2 required"):
        fetch(url, dirs, [OLD], threshold=2)
    monkeypatch.delenv(TRUSTED_KEYS_ENV)
    both = with_signatures(v5, _entry(OLD, good), sign(NEW_KEY, MANIFEST_TAG, signed_payload(v5)))
    lib = fetch(server.publish("both", both), dirs, [OLD, NEW], threshold=2)
    assert sorted(lib.status()["signed_by"]) == sorted([OLD.keyid, NEW.keyid])


# -- Wycheproof and CCTV, summarized ---------------------------------------------------------------


def test_summary_of_the_public_vectors() -> None:
    """A figure for the report, from the vectors tests/test_runtime/test_signing.py pins
    one by one: under the policy (a key must load as trusted, then `cryptography`
    verifies), every Wycheproof verdict holds and no CCTV vector with a low-order or
    non-canonical key is accepted."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from handbook.errors import KeyFormatError

    wycheproof, cctv = (
        VECTORS / "wycheproof_ed25519_test.json",
        VECTORS / "cctv_ed25519vectors.json",
    )

    def ours(key: bytes, sig: bytes, msg: bytes) -> bool:
        try:
            return PublicKey.from_raw(key).verifies(sig, msg)
        except KeyFormatError:
            return False

    def theirs(key: bytes, sig: bytes, msg: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(sig, msg)
        except (InvalidSignature, ValueError):
            return False
        return True

    data = json.loads(wycheproof.read_text())
    verdicts = [
        (
            t["result"] == "valid",
            ours(
                bytes.fromhex(g["publicKey"]["pk"]),
                bytes.fromhex(t["sig"]),
                bytes.fromhex(t["msg"]),
            ),
        )
        for g in data["testGroups"]
        for t in g["tests"]
    ]
    vectors = json.loads(cctv.read_text())
    rows = [
        (
            set(v["flags"] or []),
            (bytes.fromhex(v["key"]), bytes.fromhex(v["sig"]), v["msg"].encode()),
        )
        for v in vectors
    ]
    accepted = [flags for flags, args in rows if ours(*args)]
    plain = sum(theirs(*args) for _, args in rows)
    bad_key = sum(bool({"low_order_A", "non_canonical_A"} & flags) for flags in accepted)
    matching = sum(expected == got for expected, got in verdicts)
    print(
        f"\nWycheproof: {matching}/{len(verdicts)} verdicts match ({sum(e for e, _ in verdicts)} valid, "
        f"{sum(not e for e, _ in verdicts)} invalid); CCTV: {len(rows)} vectors, "
        f"{len(accepted)} accepted under the policy, {plain} by cryptography alone, "
        f"{plain - len(accepted)} refused at key load, {bad_key} accepted with a low-order "
        "or non-canonical key"
    )
    assert matching == len(verdicts)
    assert bad_key == 0 and len(accepted) <= plain


# -- unsigned reads, plain http and redirects (issue: remote bundles within budgets) -----------


def test_an_unsigned_bundle_never_moves_the_signed_mark(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path], tmp_path: Path
) -> None:
    """An unsigned v99 accepted under allow_unsigned used to raise the signed version
    mark, so every legitimate signed update after it was refused as a rollback."""
    build(
        dataclasses.replace(load_config(EXAMPLE / "mkdocs.yml"), version="99.0.0"),
        tmp_path / "u",
        None,
    )
    unsigned = server.publish("unsigned-v99", files_of(tmp_path / "u"))
    assert fetch(unsigned, dirs, allow_unsigned=True).version == "99.0.0"
    assert marks(dirs) == {}
    assert fetch(server.publish("signed-v5", bundles["v5"]), dirs).version == "5.0.0"
    assert marks(dirs)[mark_key(OLD)]["version"] == "5.0.0"


@pytest.mark.parametrize(
    "url",
    [
        "http://kb.example.invalid/bundle",
        "ftp://127.0.0.1/bundle",
        "file:///etc",
        "http://10.0.0.8/b",
    ],
)
def test_plain_http_beyond_loopback_is_refused_before_any_request(
    dirs: dict[str, Path], url: str
) -> None:
    with pytest.raises(
        DownloadError, match=r"plain http to a host that is not loopback|not an http\(s\) URL"
    ):
        fetch(url, dirs)
    with pytest.raises(ValueError, match=r"plain http|not an http"):
        RemoteLibrary(url)
    RemoteLibrary("https://kb.example.invalid")  # nothing is fetched when it is made
    RemoteLibrary("http://kb.example.invalid", allow_http=True)


def test_url_rules() -> None:
    assert url_problem("https://kb.example") is None
    assert url_problem("http://127.0.0.1:8000/x") is None and url_problem("http://[::1]/x") is None
    assert url_problem("http://localhost/x") is None
    assert url_problem("http://kb.example/x") is not None
    assert url_problem("http://kb.example/x", allow_http=True) is None
    assert url_problem("gopher://127.0.0.1/") is not None


def test_a_redirect_to_another_host_is_refused_unless_named(
    server: Server, bundles: dict[str, Files], dirs: dict[str, Path]
) -> None:
    """The mirror at 127.0.0.1 redirects the manifest to `localhost` (another host name):
    refused, naming the redirect; followed when that host is allowed on purpose."""
    url = server.publish("moved", {**bundles["v5"]})
    elsewhere = server.url.replace("127.0.0.1", "localhost") + "/moved-target/manifest.json"
    server.handler.routes["/moved/manifest.json"] = elsewhere
    server.handler.routes["/moved-target/manifest.json"] = bundles["v5"][MANIFEST]
    with pytest.raises(
        DownloadError, match=r"manifest\.json: .*redirect to .* refused: another host"
    ):
        fetch(url, dirs)
    policy = TrustPolicy.of([str(OLD)], state_dir=dirs["state_dir"], redirect_hosts=["localhost"])
    assert Library.open(url, trust=policy, cache_dir=dirs["cache_dir"]).version == "5.0.0"
