from __future__ import annotations

import json
import re

import pytest

from crsp_ops.data.examples import LimoExample
from crsp_ops.data.limo import load_limo
from crsp_ops.data.limo_synthetic import generate_limo_examples

MINUS = "−"  # the generator writes a typographic minus in equations


def _int(text: str) -> int:
    return int(text.replace(MINUS, "-"))


def solve(question: str) -> int:
    """An independent solver for each synthetic problem family, read from the question alone."""
    patterns = [
        (
            r"packs (\d+) boxes with (\d+) \w+ in each box and then sells (\d+)",
            lambda b, p, s: int(b) * int(p) - int(s),
        ),
        (
            rf"Solve for x: (\d+)x ([+{MINUS}]) (\d+) = (-?\d+)\.",
            lambda a, sign, b, c: (int(c) - (int(b) if sign == "+" else -int(b))) // int(a),
        ),
        (r"What is (\d+)% of (\d+)\?", lambda p, n: int(p) * int(n) // 100),
        (r"sum of the integers from 1 to (\d+)\?", lambda n: int(n) * (int(n) + 1) // 2),
        (
            r"is (\d+) years old and \w+ is (\d+) years older\. .* in (\d+) years\?",
            lambda y, g, t: 2 * int(y) + int(g) + 2 * int(t),
        ),
        (r"Compute \((\d+) \+ (\d+)\) × (\d+)\.", lambda a, b, c: (int(a) + int(b)) * int(c)),
    ]
    for pattern, compute in patterns:
        match = re.search(pattern, question)
        if match:
            return compute(*match.groups())
    raise AssertionError(f"unrecognised synthetic question: {question}")


def test_synthetic_answers_are_right_and_solutions_end_boxed():
    examples = generate_limo_examples(count=300, seed=7)
    assert len(examples) == 300
    for example in examples:
        assert _int(example.answer) == solve(example.question), example
        assert example.solution.rstrip().endswith(f"\\boxed{{{example.answer}}}")
        assert "Step 1:" in example.solution
    # Several problem families show up, not one.
    assert len({re.sub(r"\d+", "N", e.question)[:20] for e in examples}) >= 6


def test_synthetic_is_seeded():
    assert generate_limo_examples(count=20, seed=1) == generate_limo_examples(count=20, seed=1)
    assert generate_limo_examples(count=20, seed=1) != generate_limo_examples(count=20, seed=2)


def _load(source):
    return load_limo(source, synthetic_count=5, seed=0, hub_split="train", hub_revision=None)


def test_load_synthetic_source():
    result = _load("synthetic")
    assert len(result.rows) == 5 and result.n_skipped == 0
    assert all(isinstance(row, LimoExample) for row in result.rows)


def test_synthetic_count_must_be_positive():
    with pytest.raises(ValueError, match="synthetic_count"):
        load_limo("synthetic", synthetic_count=0, seed=0, hub_split="train", hub_revision=None)


def test_local_jsonl_skips_and_counts_bad_rows(tmp_path):
    good = {"question": "What is 2+2?", "solution": "2+2=4. \\boxed{4}", "answer": "4"}
    lines = [
        json.dumps(good),
        json.dumps({"question": "q", "solution": "s"}),  # missing answer
        json.dumps({"question": "q", "solution": "s", "answer": 4}),  # mistyped answer
        json.dumps({"question": "", "solution": "s", "answer": "4"}),  # empty question
        "{not json",
        json.dumps(["a", "list"]),
        "",
        json.dumps({**good, "question": "What is 3+3?", "extra": 1}),  # extra fields are fine
    ]
    path = tmp_path / "limo.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = _load(str(path))
    assert [row.question for row in result.rows] == ["What is 2+2?", "What is 3+3?"]
    assert result.n_skipped == 5
    assert sum(result.skipped_reasons.values()) == 5
    assert result.skipped_reasons["missing field 'answer'"] == 1
    assert result.skipped_reasons["field 'answer' is int, expected str"] == 1
    assert result.skipped_reasons["field 'question' is empty"] == 1


def test_local_json_and_parquet(tmp_path):
    rows = [{"question": f"q{i}", "solution": "s", "answer": str(i)} for i in range(3)]
    (tmp_path / "limo.json").write_text(json.dumps(rows + [{"question": 1}]))
    result = _load(str(tmp_path / "limo.json"))
    assert [r.answer for r in result.rows] == ["0", "1", "2"] and result.n_skipped == 1

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "limo.parquet")
    assert [r.question for r in _load(str(tmp_path / "limo.parquet")).rows] == ["q0", "q1", "q2"]


def test_file_without_valid_row_is_an_error_naming_it(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": 1}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl"):
        _load(str(path))


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        _load(str(tmp_path / "nope.jsonl"))
    (tmp_path / "data.csv").write_text("question,solution,answer\n")
    with pytest.raises(ValueError, match="unsupported"):
        _load(str(tmp_path / "data.csv"))


def test_hub_source_goes_through_datasets_with_split_and_revision(monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(repo, split, revision):
        calls.append((repo, split, revision))
        return [{"question": "q", "solution": "s \\boxed{1}", "answer": "1"}, {"question": None}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    result = load_limo(
        "hub:GAIR/LIMO", synthetic_count=1, seed=0, hub_split="train", hub_revision="abc123"
    )
    assert calls == [("GAIR/LIMO", "train", "abc123")]
    assert len(result.rows) == 1 and result.n_skipped == 1
