"""benchmarks/grpo_equivalence.py: refuses what its batch would not reflect; sees a flat step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import grpo_equivalence

REPO = Path(__file__).resolve().parents[2]


def test_masking_truncated_rows_is_refused_in_one_line(capsys):
    code = grpo_equivalence.main(["--model", "/nonexistent", "--set", "train.mask_truncated=y"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "train.mask_truncated" in err


FLAT_SECOND_STEP = '''
calls = []


def reward(completion_ids, **_):
    """Each completion's share of even token ids, except on the second step: all alike."""
    calls.append(1)
    if len(calls) == 2:
        return [0.0] * len(completion_ids)
    return [sum(1 for i in ids if i % 2 == 0) / max(len(ids), 1) for ids in completion_ids]
'''


@pytest.mark.parametrize("step_when_flat", ["y", "n"])
def test_over_steps_with_a_flat_one_the_weights_match_trls_only_when_adam_still_steps(
        step_when_flat, tiny_model_dir, tmp_path, capsys):
    pytest.importorskip("trl")
    (tmp_path / "flat_second.py").write_text(FLAT_SECOND_STEP)
    code = grpo_equivalence.main([
        "--model", str(tiny_model_dir), "--dataset", str(REPO / "examples/json_extraction/train.jsonl"),
        "--reward", f"{tmp_path / 'flat_second.py'}:reward", "--prompts", "2", "--samples", "4",
        "--max-new-tokens", "8", "--steps", "3", "--learning-rate", "1e-3",
        "--set", f"train.step_when_flat={step_when_flat}"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["steps"], result["flat_steps"]) == (3, 1)
    assert result["gradients_agree"]  # the first step is one update either way
    assert result["weights_agree"] is (step_when_flat == "y")
    assert code == (0 if step_when_flat == "y" else 1)
