"""Agreement of the offline grader with analyst labels, beside the naive any-number matcher.

Reads the project's labelled answers (``tests/evaluation/grader_cases.jsonl``: question, gold,
answer, the analyst's verdict and a family tag), grades each with
``evaluation.correctness.grade`` (question passed, ``rel_tol`` 0.01) and with the naive anchor
("any number of the answer within 1% of the gold", text gold: containment), and prints one JSON
line: agreement and Cohen's kappa of both, overall, on numeric gold, and per family; then the
same for the batches labelled blind (``tests/evaluation/batches/*.jsonl``), each beside its
recorded first-run agreement (``first_run.json``: before any rule change for that batch; over
all batches as ``first_run_all``, the grader's first-sight agreement), and
the cases the grader gets wrong, as the failures list.

    python -m benchmarks.grader_agreement [--cases FILE] [--rel-tol 0.01]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crsp_ops.evaluation.agreement import agreement_report, load_cases, naive_any_number
from crsp_ops.evaluation.correctness import grade, numeric_gold

CASES = Path(__file__).resolve().parents[1] / "tests" / "evaluation" / "grader_cases.jsonl"
BATCHES = CASES.with_name("batches")


def main() -> None:
    """Grade every labelled case both ways and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--rel-tol", type=float, default=0.01)
    args = parser.parse_args()
    cases = load_cases(args.cases)
    graders = {
        "grader": lambda c: grade(c.answer, c.gold, question=c.question,
                                  rel_tol=args.rel_tol).is_correct,
        "naive_any_number": lambda c: naive_any_number(c.answer, c.gold),
    }
    report = agreement_report(cases, graders)
    numeric = [c for c in cases if numeric_gold(c.gold) is not None]
    numeric_report = agreement_report(numeric, graders)
    report["numeric_gold"] = {key: numeric_report[key]
                              for key in ("cases", "grader", "naive_any_number")}
    batches = {path.stem: load_cases(path) for path in sorted(BATCHES.glob("*.jsonl"))}
    first_run = json.loads((BATCHES / "first_run.json").read_text(encoding="utf-8"))
    blind = [case for batch in batches.values() for case in batch]
    agreed_first = sum(first_run[name]["first_run_agreed"] for name in batches)
    report["blind_batches"] = {
        "all": {key: agreement_report(blind, graders)[key] for key in ("cases", "grader")},
        # first sight: each batch graded before any rule was changed for it (not in-sample)
        "first_run_all": {"cases": len(blind), "agreed": agreed_first,
                          "agreement": round(agreed_first / len(blind), 4)},
        **{name: {"cases": len(batch),
                  "first_run_agreement": first_run[name]["first_run_agreement"],
                  "now": agreement_report(batch, graders)["grader"]["agreement"]}
           for name, batch in batches.items()},
    }
    report["failures"] = [
        {"family": c.family, "gold": c.gold, "analyst": c.analyst_correct,
         "answer": c.answer[:160], "grader": grade(c.answer, c.gold, question=c.question,
                                                   rel_tol=args.rel_tol).reasoning}
        for c in cases + blind if graders["grader"](c) != c.analyst_correct]
    print(json.dumps({"benchmark": "grader_agreement", "rel_tol": args.rel_tol, **report}))


if __name__ == "__main__":
    main()
