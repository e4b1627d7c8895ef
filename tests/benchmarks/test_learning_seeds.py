"""benchmarks.learning seeds on hand-made learning-curve reports of several runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from benchmarks.learning.seeds import main, mean_curve, seed_interval, welch_interval


def _report(seed: int, crsp: tuple[float, float], grpo: tuple[float, float]) -> dict:
    def curve(before, after):
        return {"curve": [
            {"step": 0, "solve_rate": before, "well_formed": 0.9, "solve_rate_well_formed": 0.3},
            {"step": 4, "solve_rate": (before + after) / 2, "well_formed": 1.0,
             "solve_rate_well_formed": 0.4},
            {"step": 8, "solve_rate": after, "well_formed": 1.0,
             "solve_rate_well_formed": after}]}
    return {"seed": seed, "arms": {"crsp": curve(*crsp), "grpo": curve(*grpo)}}


def test_gains_per_seed_and_their_t_interval(tmp_path, capsys):
    paths = []
    for seed, crsp, grpo in [(0, (0.2, 0.4), (0.2, 0.35)), (1, (0.3, 0.4), (0.3, 0.4)),
                             (2, (0.25, 0.55), (0.25, 0.45))]:
        paths.append(tmp_path / f"seed{seed}.json")
        paths[-1].write_text(json.dumps(_report(seed, crsp, grpo)))
    assert main([str(p) for p in paths]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == 8 and out["seeds"] == [0, 1, 2]
    crsp = out["arms"]["crsp"]
    assert [row["gain"] for row in crsp["per_seed"]] == [0.2, 0.1, 0.3]
    assert crsp["gain"]["mean"] == pytest.approx(0.2)
    low, high = crsp["gain"]["ci95"]  # mean ± t(0.975, 2) · sd / sqrt(3) = 0.2 ± 0.2484
    assert low == pytest.approx(-0.0484, abs=1e-4) and high == pytest.approx(0.4484, abs=1e-4)
    assert out["crsp_minus_grpo"]["mean"] == pytest.approx(0.05)
    assert crsp["per_seed"][1]["correct_among_well_formed"] == [0.3, 0.4]
    assert main([*map(str, paths), "--step", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["arms"]["grpo"]["gain"]["mean"] == pytest.approx(
        (0.075 + 0.05 + 0.1) / 3)
    with pytest.raises(ValueError, match="no evaluation at step 5"):
        main([*map(str, paths), "--step", "5"])


def test_one_seed_has_no_interval():
    assert seed_interval([0.25]) == {"mean": 0.25, "ci95": [None, None], "seeds": 1}


def test_sampling_seed_runs_with_an_arm_run_alone_get_a_welch_interval(tmp_path, capsys):
    """Runs on one schedule that differ only in sampling: arms compared by their means."""
    both = {**_report(2, (0.24, 0.49), (0.24, 0.625))}
    grpo_alone = {**_report(2, (0.24, 0.0), (0.24, 0.465)), "sampling_seed": 102}
    del grpo_alone["arms"]["crsp"]
    crsp_alone = {**_report(2, (0.24, 0.52), (0.24, 0.0)), "sampling_seed": 202}
    del crsp_alone["arms"]["grpo"]
    paths = []
    for name, report in [("s2", both), ("g102", grpo_alone), ("c202", crsp_alone)]:
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    assert main([str(p) for p in paths]) == 0
    out = json.loads(capsys.readouterr().out)
    crsp, grpo = out["arms"]["crsp"], out["arms"]["grpo"]
    assert [r["sampling_seed"] for r in crsp["per_seed"]] == [2, 202]
    assert [r["sampling_seed"] for r in grpo["per_seed"]] == [2, 102]
    assert crsp["after"]["mean"] == pytest.approx(0.505)
    assert grpo["after"]["mean"] == pytest.approx(0.545)
    assert out["crsp_minus_grpo"]["mean"] == pytest.approx(0.49 - 0.625)  # the one pair
    welch = out["crsp_minus_grpo_welch"]
    expected = stats.ttest_ind([0.49, 0.52], [0.625, 0.465], equal_var=False)
    assert welch["diff"] == pytest.approx(-0.04) and welch["runs"] == [2, 2]
    low, high = expected.confidence_interval()
    assert welch["ci95"] == [pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4)]


def test_the_welch_interval_needs_two_runs_per_arm():
    assert welch_interval([0.5], [0.4, 0.6])["ci95"] == [None, None]
    assert welch_interval([0.5, 0.5], [0.4, 0.4]) == {"diff": 0.1, "ci95": [0.1, 0.1],
                                                      "runs": [2, 2]}


def _rows(*rates: float) -> list[dict]:
    return [{"step": step, "samples": 32 * step, "solve_rate": rate,
             "solve_rate_ci": [rate - 0.05, rate + 0.05], "well_formed": 1.0,
             "well_formed_ci": [1.0, 1.0], "solve_rate_well_formed": rate, "tasks": 200}
            for step, rate in zip((0, 4, 8), rates, strict=True)]


def test_the_mean_curve_keeps_common_steps_and_bands_over_runs(tmp_path, capsys):
    runs = [_rows(0.2, 0.3, 0.4), _rows(0.2, 0.35, 0.5), _rows(0.2, 0.4, 0.6)[::2]]
    points = mean_curve(runs)
    assert [p.step for p in points] == [0, 8] and points[1].samples == 256
    assert points[0].solve_rate_ci == (0.2, 0.2)  # the same base in every run
    assert points[1].solve_rate == pytest.approx(0.5)
    assert points[1].solve_rate_ci == (pytest.approx(0.2516, abs=1e-4),
                                       pytest.approx(0.7484, abs=1e-4))
    assert mean_curve(runs[:1])[1].solve_rate_ci == (0.25, 0.35)  # one run: its own band
    paths = []
    for index, curve in enumerate(runs):
        paths.append(tmp_path / f"run{index}.json")
        paths[-1].write_text(json.dumps({"seed": 2, "sampling_seed": index,
                                         "arms": {"crsp": {"curve": curve}}}))
    figure = tmp_path / "runs.png"
    assert main([*map(str, paths), "--figure", str(figure)]) == 0
    assert json.loads(capsys.readouterr().out)["figure"] == str(figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_prior_summary_adds_its_runs_and_a_report_replaces_its_own(tmp_path, capsys):
    """Runs of an earlier session, whose curve files are gone, join the new reports."""
    first = [tmp_path / "s0.json", tmp_path / "s1.json"]
    for path, (seed, crsp, grpo) in zip(first, [(0, (0.2, 0.4), (0.2, 0.35)),
                                                (1, (0.3, 0.4), (0.3, 0.4))], strict=True):
        path.write_text(json.dumps(_report(seed, crsp, grpo)))
    assert main([str(p) for p in first]) == 0
    prior = tmp_path / "prior.json"
    prior.write_text(capsys.readouterr().out)
    rerun = tmp_path / "s1_rerun.json"  # seed 1 again, now with other results
    rerun.write_text(json.dumps(_report(1, (0.3, 0.5), (0.3, 0.3))))
    third = tmp_path / "s2.json"
    third.write_text(json.dumps(_report(2, (0.25, 0.55), (0.25, 0.45))))
    assert main([str(rerun), str(third), "--prior-summary", str(prior)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == [0, 1, 2]
    assert [row["after"] for row in out["arms"]["crsp"]["per_seed"]] == [0.4, 0.5, 0.55]
    assert [row["after"] for row in out["arms"]["grpo"]["per_seed"]] == [0.35, 0.3, 0.45]
    assert out["crsp_minus_grpo"]["mean"] == pytest.approx((0.05 + 0.2 + 0.1) / 3, abs=1e-4)
    assert out["arms"]["grpo"]["sd_after"] == pytest.approx(0.0764, abs=1e-4)
    assert main(["--prior-summary", str(prior)]) == 0  # alone: the earlier line again
    again = json.loads(capsys.readouterr().out)
    assert again["arms"] == json.loads(prior.read_text())["arms"]
    with pytest.raises(ValueError, match="compares step 8.*--step 8"):
        main([str(third), "--step", "4", "--prior-summary", str(prior)])
    rerun.write_text(json.dumps({"benchmark": "learning_curve", "arms": {}}))
    with pytest.raises(ValueError, match="learning_curve_seeds JSON line"):
        main(["--prior-summary", str(rerun)])


def test_the_committed_smollm2_runs_give_the_quoted_summary(capsys):
    """lab/results/learning_curve_smollm2.json reproduces notebook/RESULTS.md's eight-run line."""
    runs = Path(__file__).parents[2] / "lab" / "results" / "learning_curve_smollm2.json"
    assert main(["--prior-summary", str(runs)]) == 0
    out = json.loads(capsys.readouterr().out)
    crsp, grpo = out["arms"]["crsp"], out["arms"]["grpo"]
    assert crsp["after"] == {"mean": 0.4988, "ci95": [0.4627, 0.5348], "seeds": 8}
    assert grpo["after"] == {"mean": 0.5, "ci95": [0.4162, 0.5838], "seeds": 8}
    assert crsp["gain"]["ci95"] == [0.2227, 0.2948]
    assert out["crsp_minus_grpo_welch"] == {"diff": -0.0012, "ci95": [-0.0878, 0.0853],
                                            "runs": [8, 8]}


def test_no_reports_and_no_prior_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        main([])
    assert "give learning_curve.json files" in capsys.readouterr().err


def test_the_committed_temperature_half_runs_give_the_quoted_summary(capsys):
    """The four runs per arm at temperature 0.5 (lab/notebook/RESULTS.md, fourth session)."""
    runs = sorted((Path(__file__).parents[2] / "lab" / "results"
                   / "learning_curve_smollm2_t05").glob("s*.json"))
    assert len(runs) == 4
    assert main([str(path) for path in runs]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arms"]["crsp"]["after"] == {"mean": 0.5737, "ci95": [0.4885, 0.659], "seeds": 4}
    assert out["arms"]["grpo"]["after"] == {"mean": 0.4463, "ci95": [0.3222, 0.5703], "seeds": 4}
    assert out["crsp_minus_grpo_welch"] == {"diff": 0.1275, "ci95": [0.0081, 0.2469],
                                            "runs": [4, 4]}


def _arm_report(folder: Path, sampling_seed: int, arm: str, after: float,
                verdicts: list[bool]) -> Path:
    """One run of one arm, with its evaluations.jsonl journal (step 0 scored as ``base``)."""
    folder.mkdir()
    report = {"seed": 4521, "sampling_seed": sampling_seed, "arms": {arm: {"curve": [
        {"step": 0, "solve_rate": 0.25, "well_formed": 1.0, "solve_rate_well_formed": 0.25},
        {"step": 8, "solve_rate": after, "well_formed": 1.0, "solve_rate_well_formed": after}]}}}
    (folder / "learning_curve.json").write_text(json.dumps(report))
    journal = [{"arm": "base", "step": 0, "correct_each": [True, False, False, False]},
               {"arm": arm, "step": 8, "correct_each": verdicts}]
    (folder / "evaluations.jsonl").write_text("\n".join(map(json.dumps, journal)) + "\n")
    return folder / "learning_curve.json"


def test_compare_pairs_arms_run_in_separate_reports_by_run_and_by_task(tmp_path, capsys):
    """A LoRA arm run apart from the full fine-tuning arm, on the same seeds: A − B three ways."""
    paths = [_arm_report(tmp_path / "full1", 1, "crsp", 0.5, [True, True, False, False]),
             _arm_report(tmp_path / "full2", 2, "crsp", 0.75, [True, True, True, False]),
             _arm_report(tmp_path / "lora1", 1, "crsp_lora", 0.25, [True, False, False, False]),
             _arm_report(tmp_path / "lora2", 2, "crsp_lora", 0.5, [True, True, False, False])]
    assert main([*map(str, paths), "--compare", "crsp_lora", "crsp"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["crsp_lora_minus_crsp"]["mean"] == pytest.approx(-0.25)  # both runs: -0.25
    assert out["crsp_lora_minus_crsp_welch"]["diff"] == pytest.approx(-0.25)
    tasks = out["crsp_lora_minus_crsp_tasks"]
    # per task, LoRA's share over 2 runs minus full's: [0, -0.5, -0.5, 0] -> mean -0.25
    assert tasks["diff"] == pytest.approx(-0.25) and tasks["tasks"] == 4
    assert tasks["runs"] == [2, 2] and tasks["ci95"][0] <= -0.25 <= tasks["ci95"][1]
    assert "crsp_minus_grpo" not in out


def test_tasks_cannot_be_paired_across_held_out_sets(tmp_path):
    paths = [_arm_report(tmp_path / "a", 1, "crsp", 0.5, [True, False, True, False]),
             _arm_report(tmp_path / "b", 2, "crsp", 0.5, [True, False]),
             _arm_report(tmp_path / "c", 1, "grpo", 0.5, [True, False, True, False])]
    with pytest.raises(ValueError, match="different numbers of held-out tasks"):
        main(list(map(str, paths)))
