"""docs/results.md lists every declared claim, failed attempts included, with computed counts."""

from __future__ import annotations

import json

from lab.registry import CLAIMS_DIR, OUTCOMES, REPO, declared
from lab.results_page import PAGE, render


def test_every_declaration_is_on_the_page():
    page = (REPO / PAGE).read_text(encoding="utf-8")
    names = declared()
    assert {p.stem for p in (REPO / CLAIMS_DIR).glob("*.md")} <= set(names)
    missing = [n for n in names if f'<a id="{n}"></a>' not in page or f"](#{n})" not in page]
    assert not missing, f"{missing} missing from {PAGE}: run python -m lab.results_page --write"


def test_the_page_is_generated_from_the_declarations():
    assert (REPO / PAGE).read_text(encoding="utf-8") == render(), (
        f"{PAGE} is stale: run `python -m lab.results_page --write` and commit it")


def test_the_header_counts_are_computed(tmp_path):
    claims = tmp_path / CLAIMS_DIR
    claims.mkdir(parents=True)
    (claims / "a_test.md").write_text("# Claim: a learns\n\n```bash\npython x.py\n```\n")
    (claims / "a_test.jsonl").write_text(json.dumps(
        {"benchmark": "learning_curve_seeds", "step": 8, "arms": {}, "a_minus_b_welch":
         {"diff": 0.07, "ci95": [-0.15, 0.29], "runs": [4, 4]}}) + "\n")
    (tmp_path / OUTCOMES).write_text(json.dumps(
        {"claim": "a_test", "outcome": "not met", "shows": "s", "does_not_show": "d"}) + "\n")
    page = render(tmp_path)
    assert "**1 declared attempts**: 1 not met." in page
    assert "a minus b welch: +0.07 [-0.15, +0.29] (Welch over runs)" in page
    (claims / "b_test.md").write_text("# Claim: b\n")
    page = render(tmp_path)
    assert "**2 declared attempts**: 1 not met, 1 declared, not run yet." in page
    assert '<a id="b_test"></a>' in page and "| numbers | none yet |" in page
    assert "| [b](#b_test) | declared, not run yet | no |" in page
    assert "| outcome | **declared, not run yet** |" in page


def test_a_suite_line_is_shown_per_task_with_each_arms_spread(tmp_path):
    claims = tmp_path / CLAIMS_DIR
    claims.mkdir(parents=True)
    (claims / "s_test.md").write_text("# Claim: s\n")
    arm = {"after": {"mean": 0.9, "ci95": [0.8, 0.95]}, "sd_after": 0.021,
           "gain": {"mean": 0.7, "ci95": [0.6, 0.8], "seeds": 4}}
    task = {"benchmark": "learning_curve_seeds", "step": 8, "arms": {"crsp": arm},
            "crsp_minus_grpo_welch": {"diff": -0.12, "ci95": [-0.5, 0.27], "runs": [4, 4]}}
    (claims / "s_test.jsonl").write_text(json.dumps(
        {"benchmark": "learning_suite", "tasks": {"review_sentiment": task}}) + "\n")
    page = render(tmp_path)
    assert "review_sentiment: crsp: step 8 0.9 [0.8, 0.95] (sd 0.021), gain +0.7" in page
    assert "review_sentiment: crsp minus grpo welch: -0.12 [-0.5, +0.27]" in page
