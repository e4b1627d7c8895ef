"""The GRPO-family knobs against hand-computed examples: loss aggregation, asymmetric clipping,
the reference KL, truncated-completion masking, dynamic sampling, the learning-rate schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.policy.peft_setup import prepare_policy
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.loss_aggregation import step_denominator, token_weights
from crsp_ops.crsp.rl.lr_schedule import lr_factor
from crsp_ops.crsp.rl.reference_kl import ReferencePolicy, kl_estimate
from crsp_ops.crsp.rl.trrpg import trrpg_loss, trrpg_token_objective
from crsp_ops.crsp.rl.update import UpdateOptions, mask_rows, policy_update, truncated_rows
from crsp_ops.crsp.selfplay.dynamic_sampling import refill
from crsp_ops.crsp.selfplay.episode import RoleSample
from crsp_ops.inference.completions import Completion
from crsp_ops.inference.rollouts import Rollout, TrainingBatch

LOSS = torch.tensor([[1.0, 2.0, 3.0, 9.0], [4.0, 9.0, 9.0, 9.0]])  # 9: off the mask
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize(("aggregation", "expected"), [
    ("token_mean", (1 + 2 + 3 + 4) / 4),           # every token alike
    ("sequence_mean", ((1 + 2 + 3) / 3 + 4) / 2),  # each response alike: (2 + 4) / 2
    ("constant_normalizer", (1 + 2 + 3 + 4) / (2 * 5)),  # Dr. GRPO, C = 5
])
def test_loss_aggregation_matches_the_hand_computed_value(aggregation, expected):
    denominator = step_denominator(MASK, aggregation)
    weights = token_weights(MASK, aggregation, denominator=denominator, normalizer=5)
    assert float((weights * LOSS).sum()) == pytest.approx(expected)
    # split into two micro-batches with the step's denominator: the same total
    halves = sum(float((token_weights(MASK[i:i + 1], aggregation, denominator=denominator,
                                      normalizer=5) * LOSS[i:i + 1]).sum()) for i in (0, 1))
    assert halves == pytest.approx(expected)


def test_a_row_without_loss_tokens_is_not_a_sequence():
    mask = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    assert step_denominator(mask, "sequence_mean") == 1.0
    assert step_denominator(mask, "token_mean") == 2.0


def test_asymmetric_clip_uses_its_own_bound_on_each_side():
    log_ratio = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))  # ratios 1.5, 0.5, 1.1
    old = torch.zeros(1, 3)
    new = (old + log_ratio).requires_grad_()
    advantages = torch.tensor([[1.0, -1.0, 1.0]])
    objective, parts = trrpg_token_objective(new, old, advantages, 0.0, log_ratio_clamp=10.0,
                                             ratio_clip=(0.2, 0.28))
    # 1.5 * (+1) capped at 1.28; 0.5 * (-1) floored at -0.8 (min picks it); 1.1 inside
    torch.testing.assert_close(objective, torch.tensor([[1.28, -0.8, 1.1]]))
    assert parts["clipped"].tolist() == [[True, True, False]]
    objective.sum().backward()
    torch.testing.assert_close(new.grad, torch.tensor([[0.0, 0.0, 1.1]]))  # dJ/dl = w·A inside
    symmetric, _ = trrpg_token_objective(new, old, advantages, 0.0, log_ratio_clamp=10.0,
                                         ratio_clip=0.2)
    assert float(symmetric[0, 0].detach()) == pytest.approx(1.2)


def test_reference_kl_estimators_match_their_formulas():
    logp, ref = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -2.0])
    torch.testing.assert_close(kl_estimate(logp, ref, "k1"), torch.tensor([1.0, -1.0]))
    d = ref - logp  # (-1, 1)
    torch.testing.assert_close(kl_estimate(logp, ref, "k3"), torch.exp(d) - d - 1)
    assert kl_estimate(logp, logp, "k3").eq(0).all()


def test_reference_kl_term_enters_the_loss_with_its_coefficient():
    old = torch.zeros(1, 2)
    new = torch.zeros(1, 2)
    kl = torch.tensor([[0.5, 1.5]])
    loss, metrics = trrpg_loss(new, old, torch.tensor([0.0]), torch.ones(1, 2), beta=0.0,
                               log_ratio_clamp=10.0, ratio_clip=None, ref_kl=kl, ref_coef=0.1)
    assert float(loss) == pytest.approx(0.1 * (0.5 + 1.5) / 2)
    assert metrics["ref_kl"] == pytest.approx(1.0)


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1)
    return LlamaForCausalLM(config)


def _batch(rewards) -> TrainingBatch:
    rng = np.random.default_rng(0)
    rows = [Rollout(env_name="solve/math", env_example_id=str(i),
                    prompt_tokens=rng.integers(3, 90, 5), response_tokens=rng.integers(3, 90, 6),
                    response_logprobs=np.full(6, -3.0), token_rewards=np.zeros(6),
                    episode_reward=reward, logprob_semantics="raw")
            for i, reward in enumerate(rewards)]
    return TrainingBatch.from_rollouts(rows, pad_token_id=0)


def _options(**extra) -> UpdateOptions:
    return UpdateOptions(algorithm=get_algorithm("trr++"), betas={"solve": 0.0},
                         log_ratio_clamp=20.0, ratio_clip=None, advantage_eps=1e-6,
                         micro_batch_size=4, update_epochs=1, max_grad_norm=0.0,
                         on_policy=True, **extra)


class _Settings:  # the train keys prepare_policy reads
    def __init__(self, rank: int, checkpointing: bool = False) -> None:
        self.lora_rank, self.lora_alpha, self.lora_dropout = rank, 8.0, 0.0
        self.lora_target_modules = ("all-linear",)
        self.gradient_checkpointing = checkpointing


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_reference_kl_is_zero_at_step_zero_and_positive_after_an_update(lora_rank):
    model = prepare_policy(_model(), _Settings(lora_rank)).train()
    if lora_rank:  # peft starts B at 0: the adapter is a no-op until trained
        assert all(float(p.detach().abs().sum()) == 0 for n, p in model.named_parameters()
                   if "lora_B" in n)
    reference = ReferencePolicy(model)
    assert reference.parameters_in_memory() == (0 if lora_rank else
                                                 sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    accelerator = Accelerator(cpu=True)
    batch = _batch([1.0, -0.5, 0.5, 0.0])
    options = _options(ref_kl_coef=0.1, ref_kl_estimator="k3")
    args = (model, optimizer, accelerator, batch, ["solve"] * 4, ["math"] * 4, options)
    first = policy_update(*args, temperature=1.0, reference=reference)
    assert first["ref_kl"] == 0.0  # the policy is its reference before any update
    second = policy_update(*args, temperature=1.0, reference=reference)
    assert second["ref_kl"] > 1e-6


def test_masked_truncated_rows_train_nothing_but_keep_their_reward_in_the_baseline():
    rewards = [1.0, -0.5, 0.5, 0.0]
    batch = _batch(rewards)
    masked = mask_rows(batch, [1, 3])
    assert float(masked.loss_mask[[1, 3]].sum()) == 0
    assert torch.equal(masked.loss_mask[[0, 2]], batch.loss_mask[[0, 2]])
    model = _model().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    metrics = policy_update(model, optimizer, Accelerator(cpu=True), masked, ["solve"] * 4,
                            ["math"] * 4, _options(), temperature=1.0)
    # TRR++ whitens over all four rewards (mean 0.25, population std 0.559): the kept rows'
    # advantages are (0.75, 0.25) / 0.559; on-policy ratio 1, token mean over their 12 tokens
    std = float(np.std(rewards))
    expected = -(6 * 0.75 / std + 6 * 0.25 / std) / 12
    assert metrics["loss"] == pytest.approx(expected, rel=1e-4)


def _sample(role, index, sample, reward, finish="stop", task_type="math"):
    completion = Completion(text="x", prompt_token_ids=(1,), token_ids=(2,), logprobs=(-1.0,),
                            finish_reason=finish, logprob_semantics="processed")
    example = f"{role}/{index}/{sample}" if role == "solve" else f"{role}/{index}"
    info = {"task_index": index} if role == "solve" else {}
    return RoleSample(role, task_type, example, (), completion, reward, reward, True, True, info)


def test_truncated_rows_are_the_rollouts_whose_completion_hit_the_budget():
    samples = [_sample("solve", 0, 0, 1.0), _sample("solve", 0, 1, 0.0, finish="length"),
               _sample("propose", 0, 0, 0.5, finish="length", task_type="code_o")]
    keys = [("solve/math", "solve/0/1"), ("propose/code_o", "propose/0"),
            ("solve/math", "solve/0/0")]
    assert truncated_rows(samples, keys) == [0, 1]


def test_dynamic_sampling_drops_flat_groups_and_refills_up_to_the_cap():
    samples = [_sample("propose", 0, 0, 0.5, task_type="code_o"),
               _sample("solve", 0, 0, 1.0), _sample("solve", 0, 1, 1.0),   # flat
               _sample("solve", 1, 0, 1.0), _sample("solve", 1, 1, -0.5),  # informative
               _sample("solve", 2, 0, -1.0, task_type="code_o"),
               _sample("solve", 2, 1, -1.0, task_type="code_o")]          # flat
    calls = []

    def solve_more(types, round_index):
        calls.append((list(types), round_index))
        if round_index == 0:  # the math task is informative, the code_o one flat again
            return [_sample("solve", 0, 0, 1.0), _sample("solve", 0, 1, 0.0),
                    _sample("solve", 1, 0, 0.0, task_type="code_o"),
                    _sample("solve", 1, 1, 0.0, task_type="code_o")]
        return [_sample("solve", 0, 0, 0.0, task_type="code_o"),
                _sample("solve", 0, 1, 0.0, task_type="code_o")]  # flat: cap reached

    kept, counters = refill(samples, solve_more, max_rounds=2)
    assert calls == [(["math", "code_o"], 0), (["code_o"], 1)]
    solve_ids = [s.example_id for s in kept if s.role == "solve"]
    assert solve_ids == ["solve/1/0", "solve/1/1", "solve/3/0", "solve/3/1"]  # relabelled
    assert counters == {"dynamic_sampling/flat_groups": 4.0, "dynamic_sampling/extra_tasks": 3.0,
                        "dynamic_sampling/extra_samples": 6.0,
                        "dynamic_sampling/dropped_samples": 8.0, "dynamic_sampling/rounds": 2.0,
                        "dynamic_sampling/unfilled": 1.0}
    generated = 6 + counters["dynamic_sampling/extra_samples"]
    assert sum(s.role == "solve" for s in kept) + counters["dynamic_sampling/dropped_samples"] \
        == generated  # what the trainer counts toward the curve's x axis


def test_lr_schedule_values():
    assert [lr_factor(s, total=4, warmup=1, schedule="constant") for s in (1, 2, 4)] == \
        [0.5, 1.0, 1.0]
    cosine = [lr_factor(s, total=5, warmup=1, schedule="cosine") for s in range(2, 6)]
    assert cosine == pytest.approx([1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5,
                                    0.5 * (1 + math.cos(3 * math.pi / 4))])
    assert lr_factor(3, total=3, warmup=0, schedule="linear") == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="unknown lr schedule"):
        lr_factor(1, total=2, warmup=0, schedule="step")


def test_activation_checkpointing_keeps_loss_and_gradients_with_lora():
    ids = torch.randint(3, 90, (2, 9))
    results = []
    for checkpointing in (False, True):
        model = prepare_policy(_model(), _Settings(4, checkpointing)).train()
        for name, p in model.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.1, generator=torch.Generator().manual_seed(1))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((float(loss), grads))
    (loss_a, grads_a), (loss_b, grads_b) = results
    assert abs(loss_a - loss_b) < 1e-6
    assert set(grads_a) == set(grads_b) and all("lora_" in n for n in grads_a)
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], rtol=1e-5, atol=1e-6)
