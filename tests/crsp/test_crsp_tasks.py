import pytest

from crsp_ops.crsp.executor import ExecutionJob
from crsp_ops.crsp.tasks import (
    CODE_TASK_TYPES,
    CodeTask,
    MathTask,
    TaskType,
    check_solutions,
    extract_answer,
    literal_equal,
    math_answers_match,
    parse_proposal,
    propose_prompt,
    solve_prompt,
    starter_tasks,
    validate_proposals,
)

DOUBLE = "def f(x):\n    return x * 2\n"


def respond(answer, think="working it out"):
    return f"<think>{think}</think>\n<answer>{answer}</answer>"


@pytest.mark.parametrize("task_type", CODE_TASK_TYPES)
def test_seed_task_outputs_match_the_sandbox(executor, task_type):
    tasks = starter_tasks(task_type)
    assert len(tasks) >= 2
    results = executor.run_many([ExecutionJob(t.program, t.inputs) for t in tasks])
    for task, result in zip(tasks, results, strict=True):
        assert result.ok, result.detail
        assert result.outputs == task.outputs


def test_seed_math_tasks_follow_the_limo_schema():
    tasks = starter_tasks(TaskType.MATH)
    assert tasks and all(isinstance(t, MathTask) and t.question and t.solution and t.answer
                         for t in tasks)


def test_task_records_validate():
    with pytest.raises(ValueError, match="as many outputs"):
        CodeTask(TaskType.CODE_O, DOUBLE, ("1", "2"), ("2",))
    with pytest.raises(ValueError, match=">= 2"):
        CodeTask(TaskType.CODE_F, DOUBLE, ("1",), ("2",))
    with pytest.raises(ValueError, match="code task type"):
        CodeTask(TaskType.MATH, DOUBLE, ("1",), ("2",))


def test_solve_prompts_show_what_each_type_needs():
    code_o = CodeTask(TaskType.CODE_O, DOUBLE, ("21",), ("42",))
    code_i = CodeTask(TaskType.CODE_I, DOUBLE, ("21",), ("42",))
    code_f = CodeTask(TaskType.CODE_F, DOUBLE, ("1", "2", "3"), ("2", "4", "6"), "doubles")
    assert "f(21)" in solve_prompt(code_o) and "42" not in solve_prompt(code_o)
    assert "Output: 42" in solve_prompt(code_i) and "21" not in solve_prompt(code_i)
    prompt_f = solve_prompt(code_f)
    assert "f(1) == 2" in prompt_f and "f(2) == 4" in prompt_f and "f(3)" not in prompt_f
    assert "doubles" in prompt_f and "x * 2" not in prompt_f
    assert "<answer>" in solve_prompt(MathTask("1+1?", "", "2"))
    assert "```message" in propose_prompt(TaskType.CODE_F, [code_f])
    with pytest.raises(ValueError, match="only code tasks"):
        propose_prompt(TaskType.MATH, [])


def test_check_solutions_per_type(executor):
    code_o = CodeTask(TaskType.CODE_O, DOUBLE, ("[1, 2]",), ("[1, 2, 1, 2]",))
    code_i = CodeTask(TaskType.CODE_I, DOUBLE, ("21",), ("42",))
    code_f = CodeTask(TaskType.CODE_F, DOUBLE, ("1", "'a'", "3"), ("2", "'aa'", "6"), "doubles")
    math = MathTask("Half of one?", "", r"\frac{1}{2}")
    cases = [
        (code_o, respond("[1,2,1,2]"), True, True),
        (code_o, respond("[2, 4]"), True, False),
        (code_o, "[1, 2, 1, 2]", False, False),  # no tags: malformed
        (code_i, respond("21"), True, True),
        (code_i, respond("f(21)"), True, True),
        (code_i, respond("'21'"), True, False),  # '21' * 2 == '2121'
        (code_f, respond("```python\ndef f(v):\n    return v + v\n```"), True, True),
        (code_f, respond("def f(v):\n    return v * 3\n"), True, False),
        (code_f, respond("def f(v):\n    import os\n    return v\n"), True, False),  # banned
        (code_f, respond("print('no function')"), False, False),
        (math, respond(r"\boxed{0.5}"), True, True),
        (math, respond("1/3"), True, False),
        (math, "<answer>0.5</answer>", False, False),  # no <think>
    ]
    checks = check_solutions([c[0] for c in cases], [c[1] for c in cases], executor)
    for (_, response, well_formed, correct), check in zip(cases, checks, strict=True):
        assert (check.well_formed, check.correct) == (well_formed, correct), (response, check)
    assert "banned" in checks[8].detail
    with pytest.raises(ValueError, match="responses"):
        check_solutions([code_o], [], executor)


def test_math_solutions_are_graded_with_their_question(executor):
    """A numeric truth is graded with the task's question: units, commitment, no spraying."""
    share = MathTask("What share of 8 is 2, in percent?", "", "25")
    millions = MathTask("Revenue of 1,577,000 dollars, in millions? Round to two decimal places.",
                        "", "1.58")
    cases = [
        (share, respond("25%"), True),
        (share, respond("0.25"), True),  # the question asks for percent: a fraction agrees
        (share, respond("2 of 8, so 25"), True),  # the quoted input 8 is not the answer
        (share, respond("25 or 30"), False),  # several values, no commitment
        (share, respond("26"), False),
        (millions, respond("1.577"), True),  # rounds to the requested two decimals
        (millions, respond("1.6"), False),
    ]
    checks = check_solutions([c[0] for c in cases], [c[1] for c in cases], executor)
    assert [check.correct for check in checks] == [c[2] for c in cases]


def test_literal_and_math_matching():
    assert literal_equal("{'a': 1, 'b': 2}", "{'b': 2, 'a': 1}")
    assert not literal_equal("1", "1.0")  # types differ
    assert not literal_equal("True", "1")
    assert literal_equal("<object at 0x1>", "<object at 0x1>")  # non-literal: exact text
    assert math_answers_match("1,000", "1000")
    assert math_answers_match(r"$\dfrac{3}{4}$", "0.75")
    assert math_answers_match(r"\boxed{\text{yes}}", r"\text{Yes}")
    assert not math_answers_match("x+1", "x+2")
    assert extract_answer("<answer>a</answer> then <answer> b </answer>") == "b"
    assert extract_answer("none") is None


PROPOSAL_O = respond("```python\ndef f(xs):\n    return sum(xs)\n```\n```input\n[1, 2, 3]\n```")
PROPOSAL_F = respond("```python\ndef f(n):\n    return n % 3\n```\n```input\n4\n```\n"
                     "```input\n5\n```\n```input\n6\n```\n```message\nremainder by three\n```")


def test_parse_proposal():
    draft = parse_proposal(PROPOSAL_O, TaskType.CODE_O, min_inputs_code_f=2)
    assert draft.program.startswith("def f(xs)") and draft.inputs == ("[1, 2, 3]",)
    draft_f = parse_proposal(PROPOSAL_F, TaskType.CODE_F, min_inputs_code_f=3)
    assert draft_f.inputs == ("4", "5", "6") and draft_f.message == "remainder by three"
    assert parse_proposal(PROPOSAL_F, TaskType.CODE_F, min_inputs_code_f=4) is None
    assert parse_proposal(PROPOSAL_O, TaskType.CODE_F, min_inputs_code_f=2) is None  # one input
    unhinted = PROPOSAL_F.replace("```message\nremainder by three\n```", "")
    draft_unhinted = parse_proposal(unhinted, TaskType.CODE_F, min_inputs_code_f=2)
    assert draft_unhinted.inputs == ("4", "5", "6") and draft_unhinted.message == ""
    assert parse_proposal("```python\ndef f(x):\n    return x\n```", TaskType.CODE_O,
                          min_inputs_code_f=2) is None  # no tags


def test_validate_proposals_through_the_sandbox(executor):
    hostile = respond("```python\nimport socket\ndef f(x):\n    return x\n```\n```input\n1\n```")
    random_program = respond("```python\nimport random\ndef f(x):\n    return random.random()\n"
                             "```\n```input\n1\n```")
    constant_f = respond("```python\ndef f(x):\n    return 0\n```\n```input\n1\n```\n"
                         "```input\n2\n```\n```message\nzero\n```")
    responses = [PROPOSAL_O, PROPOSAL_F, hostile, random_program, "garbage", constant_f]
    types = [TaskType.CODE_O, TaskType.CODE_F, TaskType.CODE_I, TaskType.CODE_O,
             TaskType.CODE_I, TaskType.CODE_F]
    checks = validate_proposals(responses, types, executor, min_inputs_code_f=2)
    assert [c.valid for c in checks] == [True, True, False, False, False, False]
    assert [c.well_formed for c in checks] == [True, True, True, True, False, True]
    assert checks[0].task.outputs == ("6",)
    assert checks[1].task.outputs == ("1", "2", "0")
    assert "banned" in checks[2].detail and "nondeterministic" in checks[3].detail
    assert "identical" in checks[5].detail
