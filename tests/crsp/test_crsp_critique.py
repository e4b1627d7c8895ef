import random

import pytest

from crsp_ops.crsp.selfplay.critique import (
    NEUTRAL_GRADE,
    agreement,
    count_format_failures,
    extract_think,
    parse_critique,
    parse_grade,
    parse_verdict,
)
from crsp_ops.crsp.selfplay.critique_prompts import (
    CREATIVITY_GRADING_PROMPT,
    CRITIQUE_ROLE_PROMPT,
    creativity_grading_messages,
    critique_messages,
)


def test_fenced_json_block():
    text = 'Here is my grade.\n```json\n{"rationale": "three strategies", "grade": 0.8}\n```'
    evaluation = parse_grade(text)
    assert (evaluation.grade, evaluation.rationale, evaluation.source) == (
        0.8, "three strategies", "fenced")


def test_bare_json_with_prose_and_dimensions():
    text = 'Thoughts first. {"rationale": "deep", "grade": "0.65", "depth": 0.9, "rigor": 3}'
    evaluation = parse_grade(text)
    assert evaluation.source == "bare"
    assert evaluation.grade == pytest.approx(0.65)
    assert evaluation.dimensions == {"depth": 0.9, "rigor": 1.0}


@pytest.mark.parametrize(("text", "grade"), [
    ("Final grade: 0.7", 0.7), ("GRADE = 0.25 overall", 0.25), ("grade: 7/10", 0.7),
    ('"grade": 0.4, "rationale": unterminated', 0.4),
])
def test_fallback_forms(text, grade):
    evaluation = parse_grade(text)
    assert evaluation.source == "fallback"
    assert evaluation.grade == pytest.approx(grade)


@pytest.mark.parametrize("text", [
    "", "I cannot grade this.", "{not json", '{"rationale": "no grade key"}',
    '{"grade": NaN}', '{"grade": "high"}', "grade: 5/0", "```json\n{broken\n```", "{" * 5000,
])
def test_garbage_gives_neutral_grade_and_format_failure(text):
    evaluation = parse_grade(text)
    assert evaluation.grade == NEUTRAL_GRADE
    assert not evaluation.format_ok


@pytest.mark.parametrize(("raw", "clamped"), [(1.7, 1.0), (-0.3, 0.0), (0.0, 0.0), (1, 1.0)])
def test_grades_are_clamped(raw, clamped):
    assert parse_grade(f'{{"rationale": "", "grade": {raw}}}').grade == clamped


def test_grade_inside_think_loses_to_grade_after_it():
    text = '<think>maybe {"grade": 0.1}?</think>\n{"rationale": "final", "grade": 0.9}'
    assert parse_grade(text).grade == 0.9


def test_grade_only_inside_think_is_still_found():
    assert parse_grade("<think>grade: 0.3</think>").grade == 0.3


def test_parser_never_raises_on_random_text():
    rng = random.Random(0)
    alphabet = '{}[]":,.0123456789gradeGRADE`json<>/think \n'
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        evaluation = parse_grade(text)
        assert 0.0 <= evaluation.grade <= 1.0
        parse_verdict(text)


def test_extract_think():
    assert extract_think("<think>\n step one \n</think> answer") == "step one"
    assert extract_think("<THINK>x</THINK>") == "x"
    assert extract_think("<think>never closed") is None


@pytest.mark.parametrize(("text", "verdict"), [
    ("Verdict: correct", True), ("verdict: Incorrect", False), ("**Verdict:** wrong", False),
    ("<verdict>correct</verdict>", True), ('{"verdict": false, "grade": 0.2}', False),
    ('{"verdict": "correct"}', True), ("<think>Verdict: correct</think>Verdict: incorrect", False),
    ("Verdict: correct ... on reflection Verdict: incorrect", False),
    ("The solution is fine.", None), ("<think>Verdict: correct</think>", None),
])
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) is verdict


def test_agreement_compares_verdict_with_executor_truth():
    assert agreement(True, True) == 1.0
    assert agreement(False, False) == 1.0
    assert agreement(True, False) == 0.0
    assert agreement(None, True) == 0.0


def test_parse_critique_well_formed_and_not():
    good = parse_critique('<think>I re-ran it: 55.</think>\nVerdict: correct\n'
                          '```json\n{"rationale": "checked", "grade": 0.6}\n```')
    assert good.well_formed and good.verdict is True and good.evaluation.grade == 0.6
    assert good.thinking == "I re-ran it: 55."
    assert not parse_critique("Verdict: correct {\"grade\": 0.5}").well_formed  # no <think>
    assert not parse_critique("<think>x</think> grade: 0.5").well_formed  # no verdict


def test_count_format_failures():
    evaluations = [parse_grade(t) for t in ('{"grade": 1}', "junk", "grade: 0.2", "")]
    assert count_format_failures(evaluations) == 2


def test_prompts_cover_the_four_dimensions_and_json():
    for word in ("Diversity", "Depth", "Creativity", "Persistence", "rigor", "rationale",
                 "grade", "not", "effort"):
        assert word in CREATIVITY_GRADING_PROMPT
    assert "Verdict: correct" in CRITIQUE_ROLE_PROMPT and "<think>" in CRITIQUE_ROLE_PROMPT
    messages = creativity_grading_messages("tried two ways")  # system, example, trace, prefill
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert "tried two ways" in messages[3]["content"]
    critique = critique_messages("TASK-TEXT", "SOLUTION-TEXT")
    assert "TASK-TEXT" in critique[-2]["content"] and "SOLUTION-TEXT" in critique[-2]["content"]


def test_the_critic_sees_the_solution_without_the_solvers_tags():
    """Only the prefill and the worked example carry the critique's own format."""
    messages = critique_messages("What is 2 plus 3?",
                                 "<think>2 plus 3 is 6</think><answer>6</answer>")
    request = messages[-2]["content"]
    assert "Reasoning: 2 plus 3 is 6\nFinal answer: 6" in request
    assert "<answer>" not in request and "<think>2" not in request
    for example in messages[1:-2:2]:  # the worked examples' solutions too
        assert "<answer>" not in example["content"]
