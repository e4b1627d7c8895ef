"""Held-out composite of the initial deltas, the offline proposer and the Optuna baselines.

Every arm (``offline``; ``tpe``, ``cmaes``, ``random``: Optuna's samplers run as named) gets the
same iteration budget, minibatch size and minibatch draws (seeded per seed), on the embedded
default (the tiny model, its clusters, zero initial deltas, the synthetic FinanceBench pool);
each run's best deltas are then scored on the same held-out questions. ``--split dev|test``
takes the data and search seeds of ``benchmarks/splits.py``. Prints a table and a JSON line.

    python -m benchmarks.proposers [--split dev] [--iterations 8] [--arms offline tpe] \
        [--project DIR]

The embedded default is built once under ``--project`` with the real stage commands
(``crsp-ops limo|financebench|base-model|clusters|deltas``) and reused by later runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.splits import SPLITS, evolve_split

REPO = Path(__file__).resolve().parents[1]
ARMS = ("offline", "tpe", "cmaes", "random")
DEFAULT_PROJECT = Path(tempfile.gettempdir()) / "crsp_ops_evolve_bench"
STAGES = (
    ["limo"], ["financebench"], ["base-model"],
    ["clusters", "--model", "models/base", "--out", "outputs/clusters"],
    ["deltas", "--clusters", "outputs/clusters", "--out", "outputs/deltas/deltas_initial.json"],
)


def add_harness_args(parser: argparse.ArgumentParser) -> None:
    """``--project``, ``--set`` (the searches) and ``--stage-set`` (building the stages)."""
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="section.key=value for the searches")
    parser.add_argument("--stage-set", dest="stage_overrides", action="append", default=[],
                        help="section.key=value for building the stages (first run only)")


def embedded_default(project: Path, stage_overrides: list[str] = ()) -> Path:
    """Build (once) a project with the stage outputs of the embedded defaults.

    ``stage_overrides`` (``section.key=value``) shrink the stages on a busy machine, e.g.
    fewer tiny-model training steps; they are recorded in ``.stages_done``.
    """
    from crsp_ops.config import sync_params
    from crsp_ops.paths import copy_config_tree

    done = project / ".stages_done"
    project.mkdir(parents=True, exist_ok=True)
    copy_config_tree(REPO, project)  # every run: options added since the build must load
    sync_params(project)
    if done.exists():
        built = data_seed(json.loads(done.read_text())["stage_overrides"])
        if built != data_seed(stage_overrides):
            raise SystemExit(f"{project} holds the data of financebench.seed={built}, not "
                             f"{data_seed(stage_overrides)}: pass another --project")
        return project
    env = {**os.environ, "CRSP_OPS_ROOT": str(project), "HF_HUB_OFFLINE": "1"}
    for stage in STAGES:
        print(f"# building stage: crsp-ops {' '.join(stage)}", file=sys.stderr)
        sets = [arg for item in ["tracking.enabled=n", *stage_overrides]
                for arg in ("--set", item)]
        subprocess.run([sys.executable, "-m", "crsp_ops.cli", *stage, *sets], cwd=project,
                       env=env, check=True, stdout=subprocess.DEVNULL)
    done.write_text(json.dumps({"stage_overrides": list(stage_overrides)}) + "\n")
    return project


def data_seed(stage_overrides) -> str:
    """The ``financebench.seed`` a list of stage overrides builds (``"0"``: the default).

    >>> data_seed(["model.tiny_train_steps=60", "financebench.seed=4517"])
    '4517'
    """
    seeds = [item.split("=", 1)[1] for item in stage_overrides
             if item.startswith("financebench.seed=")]
    return seeds[-1] if seeds else "0"


class Harness:
    """The embedded default loaded once: settings, backend, pool, held-out, evaluate()."""

    def __init__(self, project: Path, overrides: list[str]) -> None:
        from functools import partial

        from crsp_ops.config import load_settings
        from crsp_ops.evaluation.minibatch_grading import grading_from_settings
        from crsp_ops.evolve.inputs import (
            load_cluster_inputs,
            load_initial_deltas,
            load_pool_and_heldout,
        )
        from crsp_ops.evolve.minibatch import run_minibatch
        from crsp_ops.inference.open_backend import open_backend, prompt_template, sampling_params

        os.environ["CRSP_OPS_ROOT"] = str(project)
        self.project = project
        self.settings = load_settings(project, ["tracking.enabled=n", *overrides], env={}).settings
        self.clusters = load_cluster_inputs(project / "outputs/clusters")
        self.initial = load_initial_deltas(project / "outputs/deltas/deltas_initial.json",
                                           self.clusters.n_clusters)
        self.pool, self.heldout = load_pool_and_heldout(
            project / "data/financebench", heldout_size=0, seed=0)
        self._backend_cm = open_backend(self.settings, project / "models/base",
                                        project / "outputs/clusters")
        self.backend = self._backend_cm.__enter__()
        self._run = partial(run_minibatch, backend=self.backend,
                            template=prompt_template(self.settings),
                            sampling=sampling_params(self.settings),
                            grade=grading_from_settings(self.settings.scoring))

    def evaluate(self, examples, deltas):
        """``run_minibatch`` with this harness's backend."""
        return self._run(examples, deltas=deltas)

    def close(self) -> None:
        """Release the backend."""
        self._backend_cm.__exit__(None, None, None)


def evolve_once(harness: Harness, arm: str, seed: int, iterations: int, out: Path):
    """Run the loop with one arm (``offline`` or an Optuna sampler); return its outcome."""
    from benchmarks.evolve_heldout import arm_proposer
    from crsp_ops.evolve.loop import LoopConfig, run_evolution
    from crsp_ops.evolve.proposer_factory import build_proposer
    from crsp_ops.evolve.store import EvolutionStore

    kind, settings = arm_proposer(arm, harness.settings, seed, iterations)
    proposer = build_proposer(
        kind, settings, token_clusters=harness.clusters.token_clusters,
        n_clusters=harness.clusters.n_clusters, initial_deltas=harness.initial, out_dir=out,
        tokenize=lambda text: harness.backend.tokenizer(text, add_special_tokens=False)[
            "input_ids"],
    )
    store = EvolutionStore(out, harness.clusters.token_clusters, harness.clusters.n_clusters)
    return run_evolution(
        pool=harness.pool, evaluate=harness.evaluate, proposer=proposer, store=store,
        initial_deltas=harness.initial, cluster_descriptions=harness.clusters.descriptions,
        config=LoopConfig(iterations=iterations, minibatch_size=settings.evolve.minibatch_size,
                          seed=seed, stop_on_failure=False,
                          paired_best=settings.evolve.paired_best),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="a subset of the split's search seeds (default: all of them)")
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    add_harness_args(parser)
    args = parser.parse_args()
    split = evolve_split(args.split)
    seeds = list(split.search_seeds) if args.seeds is None else args.seeds
    if not set(seeds) <= set(split.search_seeds):
        parser.error(f"--split {args.split} searches with seeds {list(split.search_seeds)} "
                     f"(benchmarks/splits.py); {seeds} is not a subset of them")
    arms = args.arms

    from crsp_ops.evolve.iteration import score_dict

    stage_overrides = [*split.stage_overrides(), *args.stage_overrides]
    project = args.project / args.split if args.project == DEFAULT_PROJECT else args.project
    harness = Harness(embedded_default(project, stage_overrides), args.overrides)
    try:
        heldout = harness.heldout
        initial = score_dict(harness.evaluate(heldout, harness.initial).scores)["composite_score"]
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for seed in seeds:
                row = {"seed": seed, "initial": initial}
                for kind in arms:
                    outcome = evolve_once(harness, kind, seed, args.iterations,
                                          Path(tmp) / f"{kind}-{seed}")
                    scores = score_dict(harness.evaluate(heldout, outcome.best_deltas).scores)
                    row[kind] = scores["composite_score"]
                    row[f"{kind}_mean_tokens"] = scores["mean_token_length"]
                    row[f"{kind}_correctness"] = scores["correctness_ratio"]
                rows.append(row)
                print(f"# seed {seed}: {json.dumps(row)}", file=sys.stderr)
    finally:
        harness.close()
    print(f"held-out composite ({len(heldout)} questions, {args.iterations} iterations, "
          f"minibatch {harness.settings.evolve.minibatch_size})")
    print(f"{'seed':>4}  {'initial':>8}  " + "  ".join(f"{kind:>8}" for kind in arms))
    for row in rows:
        print(f"{row['seed']:>4}  {row['initial']:8.4f}  "
              + "  ".join(f"{row[kind]:8.4f}" for kind in arms))
    summary = {
        "benchmark": "proposers", "split": args.split, "seeds": seeds,
        "iterations": args.iterations, "heldout_questions": len(heldout),
        "initial_composite": initial,
        **{f"{kind}_composite_mean": statistics.mean(r[kind] for r in rows) for kind in arms},
        **{f"{kind}_composite_min": min(r[kind] for r in rows) for kind in arms},
        **({"offline_beats_initial_all_seeds": all(r["offline"] > initial for r in rows)}
           if "offline" in arms else {}),
        "rows": rows,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
