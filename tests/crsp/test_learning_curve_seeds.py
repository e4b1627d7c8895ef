"""benchmarks/learning_curve_seeds.py on hand-made learning-curve reports of three seeds."""

from __future__ import annotations

import json

import pytest

from benchmarks.learning_curve_seeds import main, seed_interval


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
