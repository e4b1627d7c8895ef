"""benchmarks.learning suite: its tasks are users' tasks, its verdicts read the goal right."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.learning.arm_settings import arm_settings, settings_root
from benchmarks.learning.curve import parse_args as curve_args
from benchmarks.learning.suite import (
    ROOT,
    SUITE,
    main,
    parse_args,
    run_command,
    shown,
    verdicts,
)
from crsp_ops.config import load_settings


def rows(task, split):
    path = task.eval_file(split) if split != "train" else ROOT / task.folder / "train.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def reward_function(task):
    file, name = task.reward.split(":")
    spec = importlib.util.spec_from_file_location(f"suite_{name}", ROOT / task.folder / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def reference_reply(row):
    """The reply a perfect model gives, built from the columns the reward reads."""
    if "city" in row:
        return json.dumps({"name": row["name"], "city": row["city"]})
    if "label" in row:
        return row["label"].capitalize() + "."
    return f"The answer is {row['answer']}."


@pytest.mark.parametrize("name", sorted(SUITE))
def test_a_suite_task_is_a_users_task_with_disjoint_splits(name):
    task = SUITE[name]
    source = (ROOT / task.folder / task.reward.split(":")[0]).read_text(encoding="utf-8")
    assert "import crsp_ops" not in source and "from crsp_ops" not in source  # as for TRL
    prompts = {split: {json.dumps(r["prompt"]) for r in rows(task, split)}
               for split in ("train", "dev", "test")}
    assert all(prompts.values())
    assert not prompts["train"] & prompts["dev"] and not prompts["train"] & prompts["test"]
    assert not prompts["dev"] & prompts["test"]


@pytest.mark.parametrize("name", sorted(SUITE))
def test_a_suite_reward_gives_the_reference_reply_full_marks_and_a_wrong_one_none(name):
    task, reward = SUITE[name], reward_function(SUITE[name])
    sample = rows(task, "dev")[:20]
    columns = {key: [row[key] for row in sample] for key in sample[0] if key != "prompt"}
    prompts = [row["prompt"] for row in sample]
    assert reward(prompts, [reference_reply(row) for row in sample], **columns) == [1.0] * 20
    wrong = [[{"role": "assistant", "content": "I cannot help with that."}] for _ in sample]
    assert reward(prompts, wrong, **columns) == [0.0] * 20


def test_the_command_trains_both_arms_on_the_splits_file_at_the_tasks_budget(tmp_path):
    args = SimpleNamespace(model="m", split="test", steps=8, eval_every=4, heldout=300,
                           tasks_per_step=4, samples=8, learning_rate=1e-5, temperature=0.7,
                           max_new_tokens=None, overrides=["train.top_p=0.9"], arms=["crsp", "grpo"],
                           schedule="shared")
    command = run_command(args, "word_problems", 4521, tmp_path)
    text = " ".join(command)
    assert "--arms crsp grpo" in text and "--split test" in text
    assert command[command.index("--eval-dataset") + 1].endswith("word_problems/test.jsonl")
    assert command[command.index("--max-new-tokens") + 1] == "32"
    assert command[-2:] == ["--set", "train.top_p=0.9"]
    assert "--schedule-seed" not in command  # shared: the split's schedule seed


def test_each_task_trains_at_its_own_prompts_per_step_unless_one_is_given(tmp_path):
    args = SimpleNamespace(model="m", split="dev", steps=8, eval_every=4, heldout=200,
                           tasks_per_step=None, samples=8, learning_rate=1e-5, temperature=0.7,
                           max_new_tokens=None, overrides=[], schedule="shared",
                           arms=["crsp", "grpo"])

    def prompts(name):
        command = run_command(args, name, 2, tmp_path)
        return command[command.index("--tasks-per-step") + 1]

    assert (prompts("review_sentiment"), prompts("word_problems")) == ("16", "4")
    args.tasks_per_step = 2
    assert (prompts("review_sentiment"), prompts("word_problems")) == ("2", "2")


def test_per_run_schedules_give_each_run_its_sampling_seeds_order(tmp_path):
    args = SimpleNamespace(model="m", split="dev", steps=8, eval_every=4, heldout=200,
                           tasks_per_step=4, samples=8, learning_rate=1e-5, temperature=0.7,
                           max_new_tokens=None, overrides=[], schedule="per-run",
                           arms=["crsp", "grpo"])
    command = run_command(args, "review_sentiment", 102, tmp_path)
    assert command[command.index("--schedule-seed") + 1] == "102"
    assert command[command.index("--sampling-seed") + 1] == "102"


def test_learning_rate_dataset_trains_both_arms_at_the_shipped_dataset_default(tmp_path):
    argv = ["--model", "m", "--split", "test", "--seeds", "4549", "4550", "--out", str(tmp_path)]
    assert parse_args(argv).learning_rate == 1e-5  # the earlier claims' rate stays the default
    args = parse_args([*argv, "--learning-rate", "dataset", "--schedule", "per-run"])
    for name in SUITE:
        curve = curve_args(run_command(args, name, 4549, tmp_path)[4:])  # the curve's options
        # what a user's dataset run trains at with nothing set (train.preset=auto)
        shipped = load_settings(settings_root(), [f"train.dataset={curve.dataset}"])
        assert shipped.sources["train.learning_rate"] == "preset:dataset"
        assert arm_settings(curve, "crsp").train.learning_rate == \
            shipped.settings.train.learning_rate == curve.learning_rate  # GRPO's rate too
    with pytest.raises(SystemExit):
        parse_args([*argv, "--learning-rate", "shipped"])


def summary(crsp, grpo, low):
    return {"arms": {"crsp": {"sd_after": crsp}, "grpo": {"sd_after": grpo}},
            "crsp_minus_grpo_welch": {"diff": low + 0.03, "ci95": [low, low + 0.06]}}


def test_the_verdicts_read_the_margin_the_interval_and_the_spread():
    assert verdicts(summary(0.02, 0.04, 0.01)) == {"within_0_02": True, "ahead": True,
                                                   "sd_below_0_05": True}
    behind = verdicts(summary(0.02, 0.07, -0.06))  # diff -0.03: past the margin
    assert behind == {"within_0_02": False, "ahead": False, "sd_below_0_05": False}
    assert verdicts({"arms": {}}) == {}


def test_only_seeds_trains_its_own_runs_and_waits_for_the_others(tmp_path, monkeypatch, capsys):
    trained = []

    def fake_run(command, **_):
        trained.append(int(command[command.index("--sampling-seed") + 1]))

    monkeypatch.setattr("benchmarks.learning.suite.subprocess.run", fake_run)
    argv = ["--model", "m", "--split", "test", "--runs", "4", "--tasks", "review_sentiment",
            "--out", str(tmp_path), "--only-seeds", "4532", "4534"]
    assert main(argv) == 0
    assert trained == [4532, 4534]
    assert capsys.readouterr().out == ""  # no summary while runs 4531 and 4533 are missing
    with pytest.raises(SystemExit) as stop:
        main([*argv[:-2], "402"])  # a dev seed is not a run of the test split
    assert stop.value.code == 2


def test_seeds_names_the_runs_and_refuses_a_seed_outside_the_split(tmp_path, monkeypatch):
    trained = []

    def fake_run(command, **_):
        trained.append(int(command[command.index("--sampling-seed") + 1]))

    monkeypatch.setattr("benchmarks.learning.suite.subprocess.run", fake_run)
    argv = ["--model", "m", "--split", "test", "--tasks", "review_sentiment",
            "--out", str(tmp_path), "--seeds", "4535", "4536", "4537"]
    assert main(argv) == 0
    assert trained == [4535, 4536, 4537]  # not the split's first runs, 4531-4533
    for bad in (["4535", "402"], ["4535", "4535"]):  # a dev seed; a seed twice
        with pytest.raises(SystemExit) as stop:
            main([*argv[:-3], *bad])
        assert stop.value.code == 2


def test_a_committed_path_is_recorded_relative_to_the_repository_and_others_as_given():
    assert shown(ROOT / "lab/results/suite/runs.png") == "lab/results/suite/runs.png"
    assert shown(Path("/tmp/suite/runs.png")) == "/tmp/suite/runs.png"


def write_run(folder, arms, seed, *, learning_rate=1e-5):
    """A finished run of review_sentiment's test split: each arm's (after, verdicts at step 8)."""
    run = folder / "review_sentiment" / f"sampling-{seed}"
    run.mkdir(parents=True)
    curves = {arm: {"curve": [{"step": 0, "samples": 0, "solve_rate": 0.25, "well_formed": 1.0,
                               "solve_rate_well_formed": 0.25},
                              {"step": 8, "samples": 256, "solve_rate": after, "well_formed": 1.0,
                               "solve_rate_well_formed": after}]}
              for arm, (after, _) in arms.items()}
    report = {"seed": 4521, "sampling_seed": seed, "split": "test", "steps": 8, "eval_every": 4,
              "heldout": 300, "tasks_per_step": 4, "samples": 8, "learning_rate": learning_rate,
              "temperature": 0.7, "max_new_tokens": 16, "arms": curves}
    (run / "learning_curve.json").write_text(json.dumps(report))
    journal = [{"arm": "base", "step": 0, "correct_each": [True, False, False, False]}]
    journal += [{"arm": arm, "step": 8, "correct_each": verdicts}
                for arm, (_, verdicts) in arms.items()]
    (run / "evaluations.jsonl").write_text("\n".join(map(json.dumps, journal)))


def test_runs_from_takes_the_arm_not_retrained_from_the_earlier_runs(tmp_path, capsys,
                                                                    monkeypatch):
    titles = []
    monkeypatch.setattr("benchmarks.learning.suite.save_runs_figure",
                        lambda reports, path, title: titles.append(title) or path)
    earlier, now = tmp_path / "earlier", tmp_path / "now"
    for seed, (old_crsp, grpo) in {4531: (0.25, 0.5), 4532: (0.25, 0.75)}.items():
        write_run(earlier, {"crsp": (old_crsp, [True, False, False, False]),
                            "grpo": (grpo, [True, True, False, False])}, seed)
        write_run(now, {"crsp": (1.0, [True, True, True, True])}, seed)
    argv = ["--model", "m", "--split", "test", "--runs", "2", "--tasks", "review_sentiment",
            "--out", str(now), "--arms", "crsp", "--runs-from", str(earlier)]
    assert main(argv) == 0
    task = json.loads(capsys.readouterr().out)["tasks"]["review_sentiment"]
    assert [row["after"] for row in task["arms"]["crsp"]["per_seed"]] == [1.0, 1.0]
    assert [row["after"] for row in task["arms"]["grpo"]["per_seed"]] == [0.5, 0.75]
    assert task["crsp_minus_grpo_prompts"]["diff"] == 0.5  # this run's CRSP, the earlier GRPO
    assert titles == ["review_sentiment (test): every run, 2 per arm"]

    write_run(tmp_path / "other_lr", {"grpo": (0.5, [True] * 4)}, 4531, learning_rate=3e-5)
    write_run(tmp_path / "other_lr", {"grpo": (0.5, [True] * 4)}, 4532, learning_rate=3e-5)
    assert main([*argv[:-1], str(tmp_path / "other_lr")]) == 2
    assert "other learning_rate" in capsys.readouterr().err


def test_runs_from_reads_a_report_from_before_a_setting_was_recorded(tmp_path, capsys):
    earlier, now = tmp_path / "earlier", tmp_path / "now"
    for seed in (4531, 4532):
        write_run(earlier, {"grpo": (0.5, [True, True, False, False])}, seed)
        write_run(now, {"crsp": (1.0, [True] * 4)}, seed)
        for folder, schedule in ((earlier, None), (now, 4521)):  # the old one: its seed's order
            path = folder / "review_sentiment" / f"sampling-{seed}" / "learning_curve.json"
            report = json.loads(path.read_text())
            path.write_text(json.dumps({**report, "schedule_seed": schedule}))
    argv = ["--model", "m", "--split", "test", "--runs", "2", "--tasks", "review_sentiment",
            "--out", str(now), "--arms", "crsp", "--runs-from", str(earlier)]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["review_sentiment"]["goal"]["ahead"]
