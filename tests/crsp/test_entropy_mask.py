"""TRL's top_entropy_quantile: the policy loss on the highest-entropy tokens only."""

import math

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.rl import token_logprobs as token_logprobs_module
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.entropy_mask import high_entropy_mask
from crsp_ops.crsp.rl.shared_prefix import prefix_plan, prompt_keys, shared_prefix_scores
from crsp_ops.crsp.rl.token_logprobs import token_entropies, token_scores
from crsp_ops.crsp.rl.trrpg import surrogate_loss
from crsp_ops.crsp.rl.update import UpdateOptions, policy_update
from crsp_ops.inference.rollouts import Rollout, TrainingBatch


def test_token_entropies_by_hand():
    # uniform over 4: ln 4 = 1.386294. Probabilities (3/4, 1/4): −(¾ ln ¾ + ¼ ln ¼) = 0.562335;
    # logits (2 ln 3, 0) at temperature 2 are (ln 3, 0): the same distribution.
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [math.log(3.0), 0.0, -math.inf, -math.inf],
                            [2 * math.log(3.0), 0.0, -math.inf, -math.inf]]])
    entropies = token_entropies(logits[:, :2], chunk=1)
    torch.testing.assert_close(entropies, torch.tensor([[1.386294, 0.562335]]))
    torch.testing.assert_close(token_entropies(logits[:, 2:], temperature=2.0),
                               torch.tensor([[0.562335]]))


def test_the_mask_keeps_the_top_quantile_of_the_response_tokens():
    entropies = torch.tensor([[0.1, 0.9, 0.5, 0.3], [0.7, 0.2, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])  # the 9.0s are padding
    # six tokens, sorted 0.1 0.2 0.3 0.5 0.7 0.9. Quantile 0.5 keeps those >= the median, which
    # torch.quantile interpolates at rank 0.5·5 = 2.5: 0.3 + 0.5·(0.5 − 0.3) = 0.4.
    assert high_entropy_mask(entropies, mask, 0.5).tolist() == [
        [False, True, True, False], [True, False, False, False]]
    # 1/3: threshold at rank (2/3)·5 = 3.33: 0.5 + (1/3)·0.2 = 0.567, so 0.9 and 0.7 stay
    assert high_entropy_mask(entropies, mask, 1 / 3).tolist() == [
        [False, True, False, False], [True, False, False, False]]
    assert high_entropy_mask(entropies, mask, 1.0).tolist() == mask.bool().tolist()
    assert not high_entropy_mask(entropies, torch.zeros_like(mask), 0.5).any()
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        high_entropy_mask(entropies, mask, 0.0)


def test_masked_tokens_leave_the_loss_but_not_its_denominator():
    old = torch.zeros(2, 2)
    new = torch.zeros(2, 2, requires_grad=True)  # ratio 1: J = A on every token
    keep = torch.tensor([[True, False], [False, True]])
    loss, _ = surrogate_loss(new, old, torch.tensor([2.0, 1.0]), torch.ones(2, 2), beta=0.0,
                             log_ratio_clamp=20.0, ratio_clip=None, token_mask=keep)
    # −(2 + 1) / 4 tokens (not / 2 kept tokens, as TRL): −0.75; without the mask −6/4
    assert float(loss) == pytest.approx(-0.75)
    loss.backward()
    # dJ/dlogp = w·A on kept tokens only, over 4: −2/4 and −1/4
    torch.testing.assert_close(new.grad, torch.tensor([[-0.5, 0.0], [0.0, -0.25]]))


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=2, num_attention_heads=2,
                                        num_key_value_heads=1))


def _batch() -> TrainingBatch:
    rng = np.random.default_rng(0)
    prompts = [rng.integers(3, 90, 5), rng.integers(3, 90, 4)]
    rows = [Rollout(env_name="solve/math", env_example_id=str(i), prompt_tokens=prompts[i % 2],
                    response_tokens=rng.integers(3, 90, 3 + i),
                    response_logprobs=np.full(3 + i, -3.0), token_rewards=np.zeros(3 + i),
                    episode_reward=float(i % 3), logprob_semantics="raw") for i in range(4)]
    return TrainingBatch.from_rollouts(rows, pad_token_id=0)


def test_entropies_come_from_the_same_forward_shared_prompt_or_not():
    batch, model = _batch(), _model()
    logp, entropies = token_scores(model, batch.input_ids, batch.attention_mask, 0.7,
                                   entropy=True)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    log_p = torch.log_softmax(logits[:, :-1].float() / 0.7, -1)
    expected = -(log_p.exp() * log_p).sum(-1)  # (B, T-1): predicts positions 1..T-1
    torch.testing.assert_close(entropies[:, 1:], expected, rtol=1e-5, atol=1e-5)
    assert token_scores(model, batch.input_ids, batch.attention_mask, 0.7)[1] is None
    plan = prefix_plan(prompt_keys(model, batch, lockstep=False), batch.input_ids,
                       batch.prompt_lengths.tolist(), batch.attention_mask.sum(1).tolist())
    shared_logp, shared_entropies = shared_prefix_scores(model, plan, batch.input_ids, 0.7,
                                                         entropy=True)
    answers = batch.loss_mask.bool()
    torch.testing.assert_close(shared_entropies[answers], entropies[answers], rtol=1e-5,
                               atol=1e-5)
    torch.testing.assert_close(shared_logp[answers], logp[answers], rtol=1e-5, atol=1e-5)


def _update(quantile: float, level: str = "token") -> dict[str, float]:
    model = _model().train()
    options = UpdateOptions(algorithm=get_algorithm("trr++"), betas={"solve": 0.0},
                            log_ratio_clamp=20.0, ratio_clip=0.2, advantage_eps=1e-6,
                            micro_batch_size=4, update_epochs=1, max_grad_norm=0.0,
                            importance_sampling_level=level, top_entropy_quantile=quantile)
    return policy_update(model, torch.optim.SGD(model.parameters(), lr=0.1),
                         Accelerator(cpu=True), _batch(), ["solve"] * 4, ["a", "a", "b", "b"],
                         options, temperature=1.0)


def test_entropy_is_computed_only_below_quantile_one(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("entropy computed at top_entropy_quantile=1")

    everything = _update(1.0)["loss"]
    monkeypatch.setattr(token_logprobs_module, "_chunk_entropy", refuse)
    assert _update(1.0)["loss"] == everything  # no entropy asked for
    monkeypatch.undo()
    top = _update(0.25)
    assert math.isfinite(top["loss"]) and top["loss"] != everything
    assert math.isfinite(_update(0.25, "sequence")["loss"])
