"""LIMO trajectory seeding: assistant-only masking, α weighting, and a real SFT run."""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.selfplay.seeding import (
    ANSWER,
    PROMPT,
    SOLUTION,
    collate,
    run_seeding,
    seeding_loss,
    tokenize_example,
)
from crsp_ops.crsp.tasks import solve_messages
from crsp_ops.crsp.tasks.task_types import MathTask
from crsp_ops.data.examples import LimoExample
from crsp_ops.inference.context import InferenceContext

ROW = LimoExample("What is 2 + 3?", "Step 1: 2 + 3 = 5.", "5")


def test_loss_weights_solution_by_one_answer_by_alpha_and_ignores_the_prompt():
    torch.manual_seed(0)
    logits = torch.randn(1, 5, 7)
    input_ids = torch.tensor([[1, 2, 3, 4, 5]])
    segments = torch.tensor([[PROMPT, PROMPT, SOLUTION, SOLUTION, ANSWER]])
    logp = torch.log_softmax(logits, -1)
    # token t is predicted by logits at t-1
    lp = [logp[0, t - 1, input_ids[0, t]] for t in range(1, 5)]
    alpha = 0.3
    expected = -(lp[1] + lp[2] + alpha * lp[3]) / 3  # tokens 2, 3 solution; 4 answer; 1 prompt
    loss, metrics = seeding_loss(logits, input_ids, segments, alpha)
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)
    assert metrics["answer_nll"] == pytest.approx(float(-lp[3]), rel=1e-6)
    assert metrics["solution_nll"] == pytest.approx(float(-(lp[1] + lp[2]) / 2), rel=1e-6)
    # the prompt token's logit has no influence at all
    logits.requires_grad_(True)
    seeding_loss(logits, input_ids, segments, alpha)[0].backward()
    assert torch.all(logits.grad[0, 0] == 0) and torch.all(logits.grad[0, 4] == 0)
    with pytest.raises(ValueError, match="alpha"):
        seeding_loss(logits, input_ids, segments, -1.0)


def test_tokenized_example_uses_the_solver_prompt_and_tags_assistant_parts(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    context = InferenceContext(tokenizer)
    example = tokenize_example(ROW, context, tokenizer)
    prompt = context.tokenize_prompt(solve_messages(MathTask(ROW.question, ROW.solution, ROW.answer)))
    segments = torch.tensor(example.segments)
    ids = torch.tensor(example.input_ids)
    assert ids[segments == PROMPT].tolist() == prompt.tolist()
    assert example.segments == tuple(sorted(example.segments))  # prompt, then solution, then answer
    solution = tokenizer.decode(ids[segments == SOLUTION].tolist())
    answer = tokenizer.decode(ids[segments == ANSWER].tolist(), skip_special_tokens=False)
    # the solver's prompt already opens the thinking block (the <think> prefill): the solution
    # part continues it rather than opening a second one
    assert tokenizer.decode(prompt.tolist()).endswith("<think>")
    assert "2 + 3 = 5" in solution and "<think>" not in solution and "</think>" in solution
    assert answer == "<answer>5</answer>" + tokenizer.eos_token
    input_ids, attention, padded_segments = collate([example, example], tokenizer.pad_token_id)
    assert input_ids.shape == attention.shape == padded_segments.shape


def test_run_seeding_lowers_the_loss_and_skips_long_rows(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    rows = [LimoExample(f"What is {a} + {a}?", f"{a} + {a} = {2 * a}.", str(2 * a))
            for a in range(1, 5)]
    rows.append(LimoExample("long " * 2000, "x", "y"))
    losses = []
    result = run_seeding(model, tokenizer, rows, steps=8, learning_rate=1e-2, batch_size=4,
                         alpha=2.0, max_seq_len=400, seed=0,
                         accelerator=make_accelerator("no", "cpu"),
                         on_step=lambda step, metrics: losses.append(metrics["loss"]))
    assert result.steps == 8 and result.examples == 4 and result.skipped == 1
    assert losses[-1] < losses[0]
