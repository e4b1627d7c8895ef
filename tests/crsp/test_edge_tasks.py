"""The edge task generator: every problem is solvable and its own answer grades correct."""

import re

import pytest

from crsp_ops.crsp.executor import SandboxExecutor, SandboxLimits
from crsp_ops.crsp.tasks import check_solutions
from crsp_ops.crsp.tasks.edge import edge_math_tasks, edge_task
from crsp_ops.data.edge_math import DIFFICULTIES, EDGE_FAMILIES, generate_edge_examples


@pytest.fixture(scope="module")
def executor():
    pool = SandboxExecutor(SandboxLimits(timeout_s=5.0, memory_mb=512, max_file_size_mb=1.0,
                                         max_processes=1, max_output_chars=2000),
                           max_workers=1, cleanup_every=100, determinism_runs=1)
    yield pool
    pool.close()


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_every_problem_grades_correct_on_its_reference_answer(difficulty, executor):
    problems = generate_edge_examples(count=80, seed=difficulty, difficulty=difficulty)
    tasks = [edge_task(p) for p in problems]
    boxed = [re.search(r"\\boxed\{(-?\d+)\}", t.solution).group(1) for t in tasks]
    assert boxed == [t.answer for t in tasks]  # the written solution ends in the answer
    right = [f"<think>{t.solution}</think><answer>{t.answer}</answer>" for t in tasks]
    wrong = [f"<think>x</think><answer>{int(t.answer) + 1}</answer>" for t in tasks]
    assert all(c.correct and c.well_formed for c in check_solutions(tasks, right, executor))
    assert not any(c.correct for c in check_solutions(tasks, wrong, executor))
    assert all(int(t.answer) > 0 for t in tasks)  # counts of things: never negative or zero
    assert {p.family for p in problems} == set(EDGE_FAMILIES)  # equal shares, in turn


def test_difficulty_sets_the_size_of_the_numbers():
    def largest_operand(difficulty):
        problems = generate_edge_examples(count=40, seed=0, difficulty=difficulty,
                                          families=("add",))
        return max(int(n) for p in problems
                   for n in re.findall(r"\d+", p.example.question))

    assert largest_operand(1) <= 9 < largest_operand(2) <= 99 < largest_operand(3) <= 999


def test_same_seed_same_problems_and_bad_arguments_are_named():
    first = generate_edge_examples(count=10, seed=3, difficulty=2)
    assert first == generate_edge_examples(count=10, seed=3, difficulty=2)
    assert first != generate_edge_examples(count=10, seed=4, difficulty=2)
    with pytest.raises(ValueError, match="difficulty must be one of"):
        generate_edge_examples(count=1, seed=0, difficulty=4)
    with pytest.raises(ValueError, match="unknown edge families \\['divide'\\]"):
        generate_edge_examples(count=1, seed=0, families=("add", "divide"))


def test_heldout_questions_are_never_trained_on(small_settings):
    settings = small_settings("crsp.edge_tasks=3000", "crsp.heldout_math=300")
    train, held = edge_math_tasks(settings.crsp)
    assert len(held) == 300 and len(train) > 2000  # difficulty 1 repeats some questions
    assert not {t.question for t in train} & {t.question for t in held}
    assert {t.family for t in held} == set(EDGE_FAMILIES)


def test_heldout_metrics_report_each_edge_family():
    """The held-out evaluation names which family learned (``eval/solve_rate/family/...``)."""
    from crsp_ops.crsp.tasks import SolutionCheck
    from crsp_ops.crsp.trainer.evaluation import heldout_metrics

    tasks = [edge_task(p) for p in generate_edge_examples(count=40, seed=4)]
    checks = [SolutionCheck(True, task.family == "add", "") for task in tasks]
    metrics = heldout_metrics(tasks, checks)
    assert {key for key in metrics if key.startswith("family/")} == {
        f"family/{family}" for family in EDGE_FAMILIES}
    assert metrics["family/add"] == 1.0 and metrics["family/multiply"] == 0.0
    assert metrics["math"] == metrics["all"] == 0.25
