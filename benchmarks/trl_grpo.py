"""TRL's ``GRPOConfig`` as every GRPO side of the benchmarks builds it, in one place.

A GRPO side samples as CRSP's in-process sampler does (``top_k=0``, ``top_p=1.0``), keeps TRL's
loss defaults (``beta=0``, ``loss_type``, ``scale_rewards``), takes one optimizer step per
generation batch (``num_iterations=1``) on the prompts in the order given
(``shuffle_dataset=False``) at a constant learning rate without warm-up or gradient
checkpointing, and writes nothing: no report, checkpoint, progress bar or completion log.
What a benchmark measures or varies (batch shape, precision, seed, learning rate, steps) is an
argument; any other ``GRPOConfig`` field goes in ``fields`` and wins over these.
"""

from __future__ import annotations

from pathlib import Path


def grpo_config(output_dir: str | Path, *, samples: int, sequences: int, max_new_tokens: int,
                temperature: float, seed: int, micro: int | None = None, device: str = "cpu",
                mixed_precision: str = "no", **fields):
    """A ``GRPOConfig``: ``sequences`` a step, ``samples`` a prompt, ``micro`` a forward pass."""
    from trl import GRPOConfig

    micro = micro or sequences
    if sequences % micro:
        raise ValueError(f"micro-batch {micro} does not divide {sequences} sequences")
    settings = dict(
        output_dir=str(output_dir), report_to="none", use_vllm=False, use_cpu=device == "cpu",
        bf16=mixed_precision == "bf16", fp16=mixed_precision == "fp16",
        per_device_train_batch_size=micro, gradient_accumulation_steps=sequences // micro,
        num_generations=samples, max_completion_length=max_new_tokens, temperature=temperature,
        top_k=0, top_p=1.0, beta=0.0, lr_scheduler_type="constant", warmup_steps=0,
        num_iterations=1, shuffle_dataset=False, gradient_checkpointing=False,
        save_strategy="no", logging_steps=10**6, disable_tqdm=True, log_completions=False,
        dataloader_num_workers=0, seed=seed)
    return GRPOConfig(**{**settings, **fields})
