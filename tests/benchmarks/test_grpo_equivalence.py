"""benchmarks/grpo_equivalence.py refuses a setting its hand-built batch would not reflect."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import grpo_equivalence  # noqa: E402


def test_masking_truncated_rows_is_refused_in_one_line(capsys):
    code = grpo_equivalence.main(["--model", "/nonexistent", "--set", "train.mask_truncated=y"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "train.mask_truncated" in err
