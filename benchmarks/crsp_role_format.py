"""Step-0 rollouts of every CRSP role: the well-formed share of propose, solve and critique.

Runs the trainer's own episode code (``crsp_ops.crsp.selfplay.episode.propose``, ``solve`` and
``critique``: the conversations with their prefills, the in-process backend, the sandbox, the
parsers, the creativity grader when ``reward.creativity_enabled``) at the trainer's step 0 and
prints one JSON line: per role the well-formed count and share with a 95% bootstrap interval, the
mean response tokens, finish reasons and the first few malformed responses (as generated, after the
prefill); for propose also the valid share and the commonest reasons a well-formed proposal was not
valid, for critique the grader's format failures.

    python -m benchmarks.crsp_role_format --model /tmp/smollm2 --proposals 24 \
        --solve-samples 2 --critiques-per-task 2 --set train.temperature=0.7 \
        [--set train.max_new_tokens_propose=96]

Solve and critique run on the built-in seed tasks of the configured problem types (one
critique per solve sample up to ``--critiques-per-task`` per task). ``--model`` is an HF model
directory (or a ``model_ref.json`` directory); settings come from ``params.yaml`` plus ``--set``
overrides. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.cpu_trainer import measure_with_trainer  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState  # noqa: E402
from crsp_ops.crsp.selfplay.episode import builtin_rewards, critique, propose, solve  # noqa: E402
from crsp_ops.crsp.tasks import TaskType, starter_tasks  # noqa: E402
from crsp_ops.evaluation.bootstrap import bootstrap_interval  # noqa: E402


def invalid_reasons(checks, top: int = 6) -> dict[str, int]:
    """The commonest reasons (first 80 characters) that well-formed proposals were not valid.

    >>> from crsp_ops.crsp.tasks.proposals import ProposalCheck
    >>> invalid_reasons([ProposalCheck(True, None, "error: TypeError: x"),
    ...                  ProposalCheck(False, None, "format not followed")] * 2)
    {'error: TypeError: x': 2}
    """
    return dict(Counter(c.detail[:80] for c in checks if c.well_formed and not c.valid)
                .most_common(top))


def share_summary(flags: list[bool], completions, elapsed: float, show: int) -> dict:
    """Well-formed count, share and 95% bootstrap interval, tokens, finishes, malformed texts."""
    ok = sum(flags)
    low, high = bootstrap_interval([float(f) for f in flags]) if flags else (0.0, 1.0)
    return {"well_formed": ok, "n": len(flags),
            "share": round(ok / len(flags), 3) if flags else None,
            "ci95": [round(low, 3), round(high, 3)],
            "finish": dict(Counter(c.finish_reason for c in completions)),
            "mean_tokens": round(statistics.fmean(c.response_tokens for c in completions), 1)
            if completions else None,
            "generate_s": round(elapsed, 1),
            "malformed_examples": [c.text[:240] for c, f in zip(completions, flags, strict=True)
                                   if not f][:show]}


def dump(path: Path | None, role: str, completions, flags: list[bool]) -> None:
    """Append one JSON line per response (for reading the texts or re-parsing shorter budgets)."""
    if path is None:
        return
    with path.open("a") as out:
        for completion, flag in zip(completions, flags, strict=True):
            out.write(json.dumps({"role": role, "well_formed": flag, "text": completion.text,
                                  "finish": completion.finish_reason,
                                  "token_ids": list(completion.token_ids)}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--proposals", type=int, default=24, help="propose rollouts")
    parser.add_argument("--solve-samples", type=int, default=2, help="solve samples per task")
    parser.add_argument("--critiques-per-task", type=int, default=2,
                        help="critiques per seed task (at most --solve-samples)")
    parser.add_argument("--roles", nargs="+", default=["propose", "solve", "critique"],
                        choices=["propose", "solve", "critique"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=3, help="malformed responses per role")
    parser.add_argument("--dump", type=Path, default=None,
                        help="write every response here (JSON lines: role, text, token ids)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="section.key=value overrides of params.yaml")
    args = parser.parse_args()

    print(json.dumps(measure_with_trainer(
        args.model, args.overrides, lambda settings, trainer: measure(args, settings, trainer))))


def measure(args, settings, trainer) -> dict:
    """Each role's step-0 rollouts from the trainer's own backend, sandbox, buffers and options."""
    backend, executor = trainer.generation.backend, trainer.executor
    alphas = trainer.schedule(0, max(settings.train.steps - 1, 1))  # the trainer's step 1
    options = replace(trainer.episode_options, proposals=args.proposals,
                      solver_samples=args.solve_samples,
                      critiques_per_task=min(args.critiques_per_task, args.solve_samples))
    tasks = [task for name in settings.crsp.problem_types
             for task in starter_tasks(TaskType(name))]
    result = {"benchmark": "crsp_role_format", "model": str(args.model),
              "temperature": options.temperature, "max_new_tokens": dict(options.max_new_tokens),
              "creativity_enabled": options.creativity_enabled, "roles": {}}
    if "propose" in args.roles:
        started = time.perf_counter()
        _, completions, checks, types = propose(
            backend, executor, trainer.buffers, options, 0,
            random.Random(args.seed), args.seed)
        summary = share_summary([c.well_formed for c in checks], completions,
                                time.perf_counter() - started, args.show)
        dump(args.dump, "propose", completions, [c.well_formed for c in checks])
        summary["valid"] = sum(c.valid for c in checks)
        summary["invalid_details"] = invalid_reasons(checks)
        summary["task_types"] = dict(Counter(t.value for t in types))
        result["roles"]["propose"] = summary
    if {"solve", "critique"} & set(args.roles):
        started = time.perf_counter()
        solve_samples, _ = solve(backend, tasks, options,
                                 builtin_rewards(executor, options, alphas),
                                 RewardState(1, 1), args.seed + 1)
        summary = share_summary([s.well_formed for s in solve_samples],
                                [s.completion for s in solve_samples],
                                time.perf_counter() - started, args.show)
        dump(args.dump, "solve", [s.completion for s in solve_samples],
             [s.well_formed for s in solve_samples])
        summary["correct"] = sum(s.passed for s in solve_samples)
        result["roles"]["solve"] = summary
        if "critique" in args.roles:
            started = time.perf_counter()
            samples, grader_failures = critique(backend, tasks, solve_samples, options, alphas,
                                                args.seed + 2)
            summary = share_summary([s.well_formed for s in samples],
                                    [s.completion for s in samples],
                                    time.perf_counter() - started, args.show)
            dump(args.dump, "critique", [s.completion for s in samples],
                 [s.well_formed for s in samples])
            summary["verdicts"] = dict(Counter(str(s.info["verdict"]) for s in samples))
            summary["agree"] = sum(s.passed for s in samples)
            summary["grader_format_failures"] = grader_failures
            result["roles"]["critique"] = summary
    return result


if __name__ == "__main__":
    main()
