"""The clusters stage: every id has a cluster, rule clusters are exact, outputs reload exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.cluster import KMeans, MiniBatchKMeans

from crsp_ops.steering.cluster_io import (
    DESCRIPTIONS_FILE,
    load_token_clusters,
    save_token_clusters,
)
from crsp_ops.steering.clusters import build_token_clusters, embed_texts, nearest_to_centroid
from crsp_ops.steering.table import load_table_and_count
from crsp_ops.steering.token_rules import eos_token_ids, numeric_symbol_ids, subword_prefix


def _build(tokenizer, embed, eos, *, k, threshold, seed=0):
    return build_token_clusters(
        tokenizer, embed=embed, generation_eos_ids=eos, n_kmeans_clusters=k, pca_dim=8,
        seed=seed, batch_size=1000, minibatch_threshold=threshold, n_representatives=4,
        progress=False,
    )


@pytest.fixture(scope="module")
def tiny_clusters(tiny_tokenizer, tiny_generation_eos, hash_embed):
    return _build(tiny_tokenizer, hash_embed, tiny_generation_eos, k=6, threshold=10_000)


@pytest.fixture(scope="module")
def minilm_clusters(minilm_tokenizer, hash_embed):
    return _build(minilm_tokenizer, hash_embed, None, k=10, threshold=5_000)


def _check_table(clusters, tokenizer, eos):
    table = clusters.token_clusters
    assert table.shape == (len(tokenizer),)
    assert table.min() >= 0 and table.max() < clusters.n_clusters
    expected_eos = eos_token_ids(tokenizer, eos)
    expected_numeric = numeric_symbol_ids(
        clusters.texts, subword_prefix(tokenizer), excluded=expected_eos
    )
    assert set(np.flatnonzero(table == 0)) == expected_eos
    assert set(np.flatnonzero(table == 1)) == expected_numeric
    # every k-means id is used, and k-means never touches a rule token
    assert set(np.unique(table[table >= 2])) == set(range(2, clusters.n_clusters))


def test_tiny_tokenizer_table(tiny_clusters, tiny_tokenizer, tiny_generation_eos):
    _check_table(tiny_clusters, tiny_tokenizer, tiny_generation_eos)
    assert tiny_clusters.n_clusters == 8
    assert isinstance(tiny_clusters.kmeans, KMeans)  # 400-odd tokens: below the threshold


def test_minilm_tokenizer_table_uses_minibatch_kmeans(minilm_clusters, minilm_tokenizer):
    _check_table(minilm_clusters, minilm_tokenizer, None)
    assert isinstance(minilm_clusters.kmeans, MiniBatchKMeans)
    assert minilm_clusters.descriptions["0"]["size"] == 0  # BERT: no EOS by the rule


def test_outputs_reload_identically(tmp_path, minilm_clusters):
    save_token_clusters(tmp_path, minilm_clusters)
    loaded = load_token_clusters(tmp_path)
    np.testing.assert_array_equal(loaded.token_clusters, minilm_clusters.token_clusters)
    assert loaded.token_clusters.dtype == np.int64
    assert loaded.n_clusters == minilm_clusters.n_clusters
    assert loaded.texts == minilm_clusters.texts
    assert loaded.eos_ids == minilm_clusters.eos_ids
    assert loaded.numeric_ids == minilm_clusters.numeric_ids
    assert loaded.descriptions == minilm_clusters.descriptions
    probe = np.random.default_rng(0).normal(size=(50, minilm_clusters.pca.n_features_in_))
    np.testing.assert_array_equal(loaded.pca.transform(probe), minilm_clusters.pca.transform(probe))
    reduced = minilm_clusters.pca.transform(probe).astype(np.float32)
    np.testing.assert_array_equal(
        loaded.kmeans.predict(reduced), minilm_clusters.kmeans.predict(reduced)
    )
    table, n_clusters = load_table_and_count(tmp_path / "token_clusters.npy")
    np.testing.assert_array_equal(table, minilm_clusters.token_clusters)
    assert n_clusters == minilm_clusters.n_clusters
    assert json.loads((tmp_path / DESCRIPTIONS_FILE).read_text()) == minilm_clusters.descriptions


def test_saved_kmeans_reproduces_the_table(tiny_clusters, hash_embed):
    rest = np.flatnonzero(tiny_clusters.token_clusters >= 2)
    vectors = hash_embed([tiny_clusters.texts[i] for i in rest])
    labels = tiny_clusters.kmeans.predict(tiny_clusters.pca.transform(vectors).astype(np.float32))
    np.testing.assert_array_equal(labels + 2, tiny_clusters.token_clusters[rest])


def test_same_seed_same_table_other_seed_differs(tiny_tokenizer, tiny_generation_eos, hash_embed,
                                                 tiny_clusters):
    again = _build(tiny_tokenizer, hash_embed, tiny_generation_eos, k=6, threshold=10_000)
    np.testing.assert_array_equal(again.token_clusters, tiny_clusters.token_clusters)
    other = _build(tiny_tokenizer, hash_embed, tiny_generation_eos, k=6, threshold=10_000, seed=7)
    assert not np.array_equal(other.token_clusters, tiny_clusters.token_clusters)


def test_descriptions(tiny_clusters):
    descriptions = tiny_clusters.descriptions
    assert list(descriptions) == [str(i) for i in range(tiny_clusters.n_clusters)]
    assert sum(d["size"] for d in descriptions.values()) == tiny_clusters.vocab_size
    for cid, entry in descriptions.items():
        assert entry["size"] == int((tiny_clusters.token_clusters == int(cid)).sum())
        assert isinstance(entry["description"], str) and "\n" not in entry["description"]
        member_ids = np.flatnonzero(tiny_clusters.token_clusters == int(cid))
        members = {tiny_clusters.texts[i] for i in member_ids}
        assert set(entry["representative_tokens"]) <= members
        assert 0 < len(entry["representative_tokens"]) <= 4
    assert "<|im_end|>" in descriptions["0"]["representative_tokens"]
    assert "EOS" in descriptions["0"]["description"]
    assert descriptions["1"]["description"].startswith("Digits")


def test_nearest_to_centroid_orders_by_distance():
    reduced = np.array([[0.0], [3.0], [1.0], [10.0], [11.5]], dtype=np.float32)
    labels = np.array([0, 0, 0, 1, 1])
    centers = np.array([[0.9], [11.0]])
    top = nearest_to_centroid(reduced, labels, centers, top=2)
    assert top[0].tolist() == [2, 0] and top[1].tolist() == [4, 3]


def test_embed_texts_restores_input_order_and_checks_rows(hash_embed):
    texts = ["a much longer token", "b", "cc", "", "dddd"]
    np.testing.assert_array_equal(
        embed_texts(texts, hash_embed, batch_size=2, progress=False), hash_embed(texts)
    )
    with pytest.raises(ValueError, match="rows"):
        embed_texts(texts, lambda batch: np.zeros((1, 4)), batch_size=2, progress=False)


def test_bad_sizes_are_explained(tiny_tokenizer, hash_embed):
    with pytest.raises(ValueError, match="pca_dim"):
        build_token_clusters(
            tiny_tokenizer, embed=hash_embed, generation_eos_ids=None, n_kmeans_clusters=4,
            pca_dim=64, seed=0, batch_size=100, minibatch_threshold=10_000, n_representatives=3,
            progress=False,
        )
    with pytest.raises(ValueError, match="n_kmeans_clusters"):
        build_token_clusters(
            tiny_tokenizer, embed=hash_embed, generation_eos_ids=None, n_kmeans_clusters=100_000,
            pca_dim=8, seed=0, batch_size=100, minibatch_threshold=10_000, n_representatives=3,
            progress=False,
        )


def test_real_minilm_embedder_on_tiny_vocabulary(tiny_tokenizer, tiny_generation_eos):
    from crsp_ops.steering.embedder import load_sentence_embedder

    embed = load_sentence_embedder(
        "sentence-transformers/all-MiniLM-L6-v2", device="cpu", batch_size=256
    )
    vectors = embed(["revenue", "income", "<|im_end|>"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # semantics, not hashing
    clusters = _build(tiny_tokenizer, embed, tiny_generation_eos, k=6, threshold=10_000)
    _check_table(clusters, tiny_tokenizer, tiny_generation_eos)
