"""The numpy encoder's faster path keeps its answers: a text's vector does not depend on
the texts batched with it (so cached vectors equal fresh ones bit for bit), the attention's
fallback for a loose softmax shift gives the same vectors, and the encoder uses the
thread count it was given, putting the BLAS's own back afterwards."""

from __future__ import annotations

import os

import pytest

np = pytest.importorskip("numpy")
encoder_module = pytest.importorskip("handbook.search.encoder")
threads = pytest.importorskip("handbook.search.threads")

TEXTS = [
    "How many programs can talk to the compressor at once?",
    "Register 40001 holds the discharge pressure in tenths of a bar. " * 30,  # cut at 256
    "",
    "A",
    "The broker drops retained messages when the session expires.",
]


@pytest.fixture(scope="module")
def encoder() -> object:
    try:
        return encoder_module.Encoder(encoder_module.model_dir())
    except LookupError:
        if os.environ.get("CI"):
            raise
        pytest.skip("the embedding model is not installed")


def test_a_vector_does_not_depend_on_its_batch(
    encoder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    together = encoder.encode(TEXTS)
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    assert together.tobytes() == alone.tobytes()
    monkeypatch.setattr(encoder_module, "BATCH_TOKENS", 8)  # every text a batch of its own
    assert encoder.encode(TEXTS[::-1]).tobytes() == together[::-1].tobytes()
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_a_query_embeds_as_a_passage_would(encoder: object) -> None:
    """`encode_query` takes other products (faster for a few tokens): the same vector
    within float rounding."""
    passages = encoder.encode(TEXTS)
    queries = np.stack([encoder.encode_query(t) for t in TEXTS])
    assert np.allclose(queries, passages, atol=1e-6)


def test_the_softmax_fallback_gives_the_same_vectors(
    encoder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    usual = encoder.encode(TEXTS)
    monkeypatch.setattr(encoder_module, "_TINY", 1e30)  # every bound deemed too loose
    assert np.allclose(encoder.encode(TEXTS), usual, atol=1e-6)


def test_thread_count_is_set_while_encoding_and_put_back(
    encoder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    blas = threads._openblas()
    if blas is None:
        pytest.skip("no OpenBLAS found in this process")
    seen = []
    forward = encoder._forward
    monkeypatch.setattr(
        encoder, "_forward", lambda ids, product: (seen.append(blas[1]()), forward(ids, product))[1]
    )
    before = blas[1]()
    blas[0](2)  # the BLAS's own count, whatever the machine's cores
    try:
        monkeypatch.setattr(encoder, "threads", 1)
        encoder.encode(["one thread"])
        assert seen == [1] and blas[1]() == 2
    finally:
        blas[0](before)


def test_a_bad_thread_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("many", "0", "-2"):
        monkeypatch.setenv(threads.ENV, value)
        with pytest.raises(ValueError, match=threads.ENV):
            threads.configured()
    monkeypatch.setenv(threads.ENV, " 3 ")
    assert threads.configured() == 3
    monkeypatch.delenv(threads.ENV)
    assert threads.configured() == threads.DEFAULT
