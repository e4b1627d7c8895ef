"""LIMO trajectory seeding: SFT with ``L = −E[log π(s|q) + α·log π(a|q,s)]`` before self-play.

Each LIMO row becomes the solver's own math conversation (same prompt ids as at generation),
so seeding teaches exactly the format self-play samples in.

Design: docs/design/trainer.md#seeding.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from crsp_ops.crsp.rl.token_logprobs import gathered_logprobs
from crsp_ops.crsp.tasks import solve_messages
from crsp_ops.crsp.tasks.task_types import MathTask
from crsp_ops.data.examples import LimoExample
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.hf_chat import assistant_prefill

logger = logging.getLogger(__name__)

PROMPT, SOLUTION, ANSWER = 0, 1, 2  # segment ids


@dataclass(frozen=True)
class SeedingExample:
    """One tokenized conversation with the segment (prompt/solution/answer) of every token."""

    input_ids: tuple[int, ...]
    segments: tuple[int, ...]  # PROMPT, SOLUTION or ANSWER per token


@dataclass(frozen=True)
class SeedingResult:
    """What ``run_seeding`` did."""

    steps: int
    final_loss: float
    examples: int  # usable examples
    skipped: int  # examples longer than max_seq_len


def assistant_parts(row: LimoExample, end_of_turn: str) -> tuple[str, str]:
    r"""``(solution_text, answer_text)`` of the assistant reply, in the solver's format.

    >>> assistant_parts(LimoExample("q", "2+2=4", "4"), "<eot>")
    ('<think>\n2+2=4\n</think>\n', '<answer>4</answer><eot>')
    """
    return f"<think>\n{row.solution}\n</think>\n", f"<answer>{row.answer}</answer>{end_of_turn}"


def tokenize_example(row: LimoExample, context: InferenceContext, tokenizer: Any
                     ) -> SeedingExample:
    """Tokenize prompt (chat template), solution and answer parts; tag each token's segment."""
    task = MathTask(row.question, row.solution, row.answer)
    messages = solve_messages(task)
    prompt = [int(i) for i in context.tokenize_prompt(messages)]
    solution, answer = assistant_parts(row, tokenizer.eos_token or "")
    solution = solution.removeprefix(assistant_prefill(messages))  # the prompt already opens it
    solution_ids = tokenizer(solution, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    return SeedingExample(
        input_ids=tuple(prompt + solution_ids + answer_ids),
        segments=(PROMPT,) * len(prompt) + (SOLUTION,) * len(solution_ids)
        + (ANSWER,) * len(answer_ids))


def collate(examples: Sequence[SeedingExample], pad_id: int
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-pad into ``input_ids``, ``attention_mask`` and ``segments``, each ``(B, T)``.

    Padding positions get segment ``PROMPT`` (weight 0).
    """
    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)  # (B, T)
    attention = torch.zeros((len(examples), width), dtype=torch.long)  # (B, T)
    segments = torch.full((len(examples), width), PROMPT, dtype=torch.long)  # (B, T)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        input_ids[row, :n] = torch.tensor(example.input_ids)
        attention[row, :n] = 1
        segments[row, :n] = torch.tensor(example.segments)
    return input_ids, attention, segments


def seeding_loss(logits: torch.Tensor, input_ids: torch.Tensor, segments: torch.Tensor,
                 alpha: float) -> tuple[torch.Tensor, dict[str, float]]:
    """``−(Σ_solution log p + α·Σ_answer log p) / #assistant tokens`` and per-part NLLs.

    Args:
        logits: ``(B, T, V)`` model outputs.
        input_ids: ``(B, T)`` token ids.
        segments: ``(B, T)`` segment of every token.
        alpha: weight of answer tokens (>= 0).

    Returns:
        ``(loss, metrics)`` with ``solution_nll`` and ``answer_nll`` (per-token means).
    """
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    token_logp = gathered_logprobs(logits[:, :-1], input_ids[:, 1:])  # (B, T-1)
    target = segments[:, 1:]  # (B, T-1): segment of each predicted token
    solution, answer = (target == SOLUTION).float(), (target == ANSWER).float()
    weights = solution + alpha * answer  # (B, T-1)
    count = (solution + answer).sum().clamp(min=1)
    loss = -(weights * token_logp).sum() / count
    with torch.no_grad():
        metrics = {
            "loss": float(loss),
            "solution_nll": float(-(solution * token_logp).sum() / solution.sum().clamp(min=1)),
            "answer_nll": float(-(answer * token_logp).sum() / answer.sum().clamp(min=1)),
        }
    return loss, metrics


def prepare_examples(rows: Sequence[LimoExample], tokenizer: Any, *, max_seq_len: int,
                     chat_template_kwargs: Mapping[str, Any] | None = None
                     ) -> tuple[list[SeedingExample], int]:
    """Tokenize every row; rows longer than ``max_seq_len`` are skipped (never truncated).

    Prompts are rendered with ``chat_template_kwargs``, as training renders them.

    Returns:
        ``(examples, skipped)``.

    Raises:
        ValueError: no row fits.
    """
    context = InferenceContext(tokenizer, chat_template_kwargs=chat_template_kwargs)
    examples = [tokenize_example(row, context, tokenizer) for row in rows]
    kept = [e for e in examples if len(e.input_ids) <= max_seq_len]
    if not kept:
        raise ValueError(f"none of the {len(rows)} LIMO rows fits seeding.max_seq_len="
                         f"{max_seq_len} tokens; raise it")
    if len(kept) < len(examples):
        logger.warning("skipped %d of %d LIMO rows longer than %d tokens",
                       len(examples) - len(kept), len(examples), max_seq_len)
    return kept, len(examples) - len(kept)


def run_seeding(model: Any, tokenizer: Any, rows: Sequence[LimoExample], *, steps: int,
                learning_rate: float, batch_size: int, alpha: float, max_seq_len: int,
                seed: int, accelerator: Any,
                on_step: Callable[[int, dict[str, float]], None] | None = None,
                chat_template_kwargs: Mapping[str, Any] | None = None) -> SeedingResult:
    """Fine-tune ``model`` in place on LIMO rows with the seeding loss.

    Args:
        model: causal LM to train.
        tokenizer: its tokenizer (chat template, ``eos_token`` = end of turn).
        rows: training rows (the held-out split already removed).
        steps: optimizer steps.
        learning_rate: constant AdamW learning rate.
        batch_size: conversations per step (epochs reshuffle).
        alpha: weight of answer tokens.
        max_seq_len: longer rows are skipped.
        seed: shuffling seed.
        accelerator: ``accelerate.Accelerator`` (device, mixed precision, DDP).
        on_step: called with ``(step, metrics)`` after every step (the driver logs).
        chat_template_kwargs: extra chat-template variables of every prompt
            (``generation.chat_template_kwargs``: the prompts training will see).

    Returns:
        Steps done, final loss, usable and skipped example counts.
    """
    examples, skipped = prepare_examples(rows, tokenizer, max_seq_len=max_seq_len,
                                         chat_template_kwargs=chat_template_kwargs)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    rng, order, metrics = random.Random(seed), [], {"loss": float("nan")}
    for step in range(1, steps + 1):
        batch = []
        while len(batch) < batch_size:
            if not order:
                order = list(range(len(examples)))
                rng.shuffle(order)
            batch.append(examples[order.pop()])
        input_ids, attention, segments = (t.to(accelerator.device)
                                          for t in collate(batch, pad_id))
        with accelerator.autocast():
            logits = model(input_ids=input_ids, attention_mask=attention).logits  # (B, T, V)
            loss, metrics = seeding_loss(logits, input_ids, segments, alpha)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if on_step is not None:
            on_step(step, metrics)
    return SeedingResult(steps, metrics["loss"], len(examples), skipped)
