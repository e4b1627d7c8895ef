"""The bias core: one gather, padded vocabularies, dtypes, and caching of steady-state bias."""

from __future__ import annotations

import pytest
import torch

from crsp_ops.steering.bias import ClusterBias, add_bias, add_bias_, bias_rows

TABLE = torch.tensor([0, 1, 2, 2, 1, 0, 3])  # V = 7, K = 4


def test_bias_rows_is_a_gather_for_one_or_many_rows():
    deltas = torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.5, 9.0]])
    assert bias_rows(TABLE, deltas[0]).tolist() == [1, 2, 3, 3, 2, 1, 4]
    assert bias_rows(TABLE, deltas).tolist() == [
        [1, 2, 3, 3, 2, 1, 4],
        [-1, 0, 0.5, 0.5, 0, -1, 9],
    ]


def test_wider_logits_get_no_bias_beyond_the_table_and_narrower_are_rejected():
    logits = torch.zeros(2, 10)
    bias = bias_rows(TABLE, torch.tensor([1.0, 2.0, 3.0, 4.0]))
    out = add_bias(logits, bias)
    assert out[:, 7:].eq(0).all() and out[0, :7].tolist() == [1, 2, 3, 3, 2, 1, 4]
    assert logits.eq(0).all()  # add_bias leaves its input alone
    add_bias_(logits, bias)
    assert torch.equal(logits, out)
    with pytest.raises(ValueError, match="another tokenizer"):
        add_bias(torch.zeros(2, 6), bias)


def test_uniform_rows_share_one_cached_vector():
    core = ClusterBias(TABLE, 4)
    first = core.bias_for([(1.0, 2.0, 3.0, 4.0)] * 3, device="cpu", dtype=torch.float32)
    assert first.shape == (7,)
    again = core.bias_for([[1.0, 2.0, 3.0, 4.0]], device="cpu", dtype=torch.float32)
    assert again is first  # steady state: no gather, only the add
    other = core.bias_for([(0.0, 0.0, 0.0, 1.0)], device="cpu", dtype=torch.float32)
    assert other is not first and other.tolist() == [0, 0, 0, 0, 0, 0, 1]
    half = core.bias_for([(1.0, 2.0, 3.0, 4.0)], device="cpu", dtype=torch.bfloat16)
    assert half.dtype == torch.bfloat16


def test_mixed_rows_build_one_matrix_and_reuse_it():
    core = ClusterBias(TABLE, 4)
    rows = [(1.0, 0.0, 0.0, 0.0), None, (0.0, 0.0, 0.0, -2.0)]
    bias = core.bias_for(rows, device="cpu", dtype=torch.float32)
    assert bias.shape == (3, 7)
    assert bias[1].eq(0).all()  # an unsteered row gets no bias
    assert bias[0].tolist() == [1, 0, 0, 0, 0, 1, 0] and bias[2, 6] == -2
    assert core.bias_for(list(rows), device="cpu", dtype=torch.float32) is bias
    assert core.bias_for([None, None], device="cpu", dtype=torch.float32) is None


def test_apply_in_place_and_validation():
    core = ClusterBias(TABLE.numpy(), 4)
    logits = torch.randn(2, 8, generator=torch.Generator().manual_seed(0))
    before = logits.clone()
    out = core.apply_(logits, [(0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)])
    assert out is logits
    expected = before[0, :7] + torch.tensor([0, 1, 0, 0, 1, 0, 0.0])
    torch.testing.assert_close(out[0, :7], expected, rtol=0, atol=0)
    assert torch.equal(out[1], before[1]) and out[0, 7] == before[0, 7]
    with pytest.raises(ValueError, match="expected 4 deltas"):
        core.apply_(logits, [(1.0, 2.0), (1.0, 2.0)])
    with pytest.raises(ValueError, match="finite"):
        core.apply_(logits, [(1.0, 2.0, float("nan"), 0.0)] * 2)
    with pytest.raises(ValueError, match="2 logits rows"):
        core.apply_(logits, [(0.0,) * 4])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        ClusterBias(TABLE, 3)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("batch", [1, 8, 16])
def test_uniform_deltas_never_move_the_argmax_in_reduced_precision(dtype, batch):
    """A uniform shift keeps every greedy choice, also for bf16/fp16 scores (issue: H100 bf16)."""
    from crsp_ops.steering.hf import ClusterBiasLogitsProcessor

    generator = torch.Generator().manual_seed(batch)
    vocab, n_clusters = 4096, 7
    table = torch.randint(0, n_clusters, (vocab,), generator=generator)
    scores = (torch.randn(batch, vocab, generator=generator) * 8).to(dtype)
    # row 0: the top two one bf16 step apart, the larger at the higher index: adding 11 in
    # bf16 rounds 39.125 down to 39.0, a tie that argmax breaks towards the lower index
    scores[0, :] = -50.0
    scores[0, 3], scores[0, 5] = 28.0, 28.125
    for delta in (0.37, -1.9, 3.3, 11.0):
        out = ClusterBiasLogitsProcessor(table, [delta] * n_clusters)(None, scores)
        assert out.dtype == torch.float32
        assert torch.equal(out.argmax(-1), scores.float().argmax(-1))
    if dtype == torch.bfloat16:  # the reduced-precision add this replaces does move it
        shifted = scores + torch.tensor(11.0, dtype=dtype)
        assert shifted[0].argmax() == 3 and scores[0].argmax() == 5


@pytest.mark.parametrize("batch", [1, 8, 16])
def test_in_place_processor_adds_into_float32_scores_without_a_copy(batch):
    from crsp_ops.steering.hf import ClusterBiasLogitsProcessor

    generator = torch.Generator().manual_seed(batch)
    table = torch.randint(0, 4, (64,), generator=generator)
    scores = torch.randn(batch, 70, generator=generator)  # padded beyond the table
    expected = ClusterBiasLogitsProcessor(table, [0.5, -1.0, 2.0, 0.0])(None, scores)
    assert expected is not scores
    uniform = ClusterBiasLogitsProcessor(table, [3.3] * 4, in_place=True)
    out = ClusterBiasLogitsProcessor(table, [0.5, -1.0, 2.0, 0.0], in_place=True)(None, scores)
    assert out is scores and torch.equal(out, expected)
    assert torch.equal(uniform(None, scores.clone()).argmax(-1), out.argmax(-1))
