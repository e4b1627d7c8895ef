"""The settings of each learning-curve arm: the shared sizes, then the arm's own keys."""

from __future__ import annotations

from pathlib import Path

from benchmarks.vllm_cpu import vllm_cpu_overrides
from crsp_ops.config import load_settings
from crsp_ops.errors import MissingInputError
from crsp_ops.paths import project_root

ARMS = ("crsp", "trrpp", "selfplay", "grpo", "crsp_lora", "crsp_dynamic")
ARM_OVERRIDES = {
    "crsp": ["train.algorithm=trrpg"],
    "trrpp": ["train.algorithm=trrpp"],
    "selfplay": ["train.algorithm=trrpg", "crsp.problem_types=code_o,math",
                 "train.proposals_per_step=2", "train.critiques_per_task=1"],
    "grpo": [],
    # issue 42: solve-only TR-RPG with a rank-16 LoRA adapter on every linear projection; LoRA
    # usually wants ~10x full fine-tuning's learning rate (docs/scaling.md)
    "crsp_lora": ["train.algorithm=trrpg", "train.lora_rank=16", "train.lora_alpha=32",
                  "train.learning_rate=3e-4"],
    # issue 42: DAPO's dynamic sampling with the per-task baseline it is meant for (under the
    # task_type baseline a flat group still carries advantage); its refills draw further tasks
    # from the schedule and count as generated samples (compare with --sample-budget)
    "crsp_dynamic": ["train.algorithm=trrpg", "train.dynamic_sampling=y",
                     "train.advantage_baseline=task"],
}


ROLLOUTS = ("in_process", "vllm_cpu")


def rollout_overrides(args) -> list[str]:
    """The settings that send a CRSP arm's rollouts to vLLM's CPU server (``--rollouts``).

    The server is the trainer's own (``ServerGeneration``, started on the step-0 weights) and
    follows them in place after every step (``train.server_reload_interval=1``).
    """
    if args.rollouts == "in_process":
        return []
    return [*vllm_cpu_overrides(python=args.server_python), "train.server_reload_interval=1"]


def sampling_seed(args) -> int:
    """The seed of the arms' sampling: ``--sampling-seed``, else ``--seed``."""
    return args.seed if args.sampling_seed is None else args.sampling_seed


def settings_root() -> Path:
    """The project whose configuration the arms start from: the working directory's crsp_ops
    project, else this checkout (a task folder of a user's is no project)."""
    try:
        return project_root()
    except MissingInputError:
        return project_root(Path(__file__).resolve().parent)


def arm_settings(args, arm: str, seed: int | None = None):
    """The effective settings of one arm: shared sizes first, then the arm's own keys.

    ``crsp.seed`` is ``seed`` (default ``--seed``, which draws the edge tasks).
    """
    shared = [
        "tracking.enabled=n", "crsp.problem_types=math", "crsp.math_source=edge",
        f"crsp.seed={args.seed if seed is None else seed}", f"crsp.heldout_math={args.heldout}",
        f"crsp.edge_difficulty={args.difficulty}", f"train.tasks_per_type={args.tasks_per_step}",
        f"train.solver_samples={args.samples}", "train.proposals_per_step=0",
        "train.critiques_per_task=0", f"train.learning_rate={args.learning_rate}",
        f"train.temperature={args.temperature}",
        f"train.max_new_tokens_solve={args.max_new_tokens}",
        f"train.steps={args.steps}", f"generation.batch_size={args.batch_size}",
        "train.eval_interval=0", "train.checkpoint_interval=1000000",
        *([f"train.dataset={args.dataset}"] if args.dataset else [])]  # train.preset=auto
    served = rollout_overrides(args) if arm != "grpo" else []
    return load_settings(settings_root(),
                         [*shared, *ARM_OVERRIDES[arm], *served, *args.overrides]).settings
