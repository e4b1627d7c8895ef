"""Propose, critique and grader conversations: worked examples that parse, prefills put back."""

from __future__ import annotations

import random

import pytest

from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.functions import RewardState
from crsp_ops.crsp.selfplay.critique import parse_critique, parse_grade
from crsp_ops.crsp.selfplay.critique_prompts import (
    CRITIQUE_PREFILL,
    GRADING_PREFILL,
    creativity_grading_messages,
    critique_messages,
)
from crsp_ops.crsp.selfplay.episode import EpisodeOptions, builtin_rewards, critique, propose, solve
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks import (
    CODE_TASK_TYPES,
    CodeTask,
    MathTask,
    TaskType,
    parse_proposal,
    propose_messages,
    solve_prompt,
    task_statement,
    validate_proposals,
)
from crsp_ops.crsp.tasks.prompts import (
    PROPOSE_PREFILL,
    PROPOSE_SCAFFOLD_THINK,
    propose_prefill,
)
from crsp_ops.inference.backend import GenerationBackend
from crsp_ops.inference.completions import Completion

DOUBLE = CodeTask(TaskType.CODE_O, "def f(x):\n    return x * 2\n", ("3",), ("6",))
PROPOSAL = "add one</think><answer>```python\ndef f(x):\n    return x + 1\n```\n```input\n3\n```"
CRITIQUE = 'it is 8, not 4</think>\nVerdict: incorrect\n{"grade": 0.3, "rationale": "r"}'
GRADE = '0.6, "rationale": "tried two'  # cut by the budget: the grade is still there


class ReplyBackend(GenerationBackend):
    """Answers every conversation with the text its role is given (no model)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts, self.seen = texts, []

    def generate(self, conversations, params, deltas=None):
        self.seen += [list(m) for m in conversations]
        return [Completion(text=self.texts[_role(m)], prompt_token_ids=(1,), token_ids=(2,),
                           logprobs=(), finish_reason="stop") for m in conversations]


def _role(messages) -> str:
    first = messages[0]["content"]
    for prefix, role in (("Propose", "propose"), ("You review", "critique"),
                         ("You grade", "grade")):
        if first.startswith(prefix):
            return role
    return "solve"


def _options(**overrides) -> EpisodeOptions:
    values = dict(problem_types=(TaskType.CODE_O, TaskType.MATH), proposals=2, references=1,
                  tasks_per_type=1, solver_samples=1, critiques_per_task=1,
                  max_new_tokens={"propose": 8, "solve": 8, "critique": 8}, temperature=1.0,
                  min_inputs_code_f=2, length_max_length=32, length_penalty_threshold=64,
                  creativity_enabled=True, creativity_dimensions=())
    return EpisodeOptions(**{**values, **overrides})


@pytest.mark.parametrize("task_type", CODE_TASK_TYPES)
def test_propose_conversation_and_its_worked_example_is_a_valid_proposal(executor, task_type):
    messages = propose_messages(task_type, [DOUBLE])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert messages[0]["content"].startswith("Propose") and "<answer>" in messages[0]["content"]
    assert "Reference 1" in messages[3]["content"] and "Reference" not in messages[1]["content"]
    assert messages[-1] == {"role": "assistant", "content": PROPOSE_PREFILL}
    example = messages[2]["content"]
    assert parse_proposal(example, task_type, min_inputs_code_f=2) is not None
    assert validate_proposals([example], [task_type], executor, min_inputs_code_f=2)[0].valid


def test_critique_and_grader_conversations_and_their_worked_examples_parse():
    messages = critique_messages("TASK-TEXT", "SOLUTION-TEXT")
    assert [m["role"] for m in messages] == ["system", *["user", "assistant"] * 3]
    assert "TASK-TEXT" in messages[-2]["content"] and "SOLUTION-TEXT" in messages[-2]["content"]
    assert messages[-1] == {"role": "assistant", "content": CRITIQUE_PREFILL}
    worked = [parse_critique(m["content"]) for m in messages[2:-1:2]]
    assert all(c.well_formed for c in worked)
    assert [c.verdict for c in worked] == [False, True]  # one worked critique of each verdict
    grading = creativity_grading_messages("tried two ways")
    assert "tried two ways" in grading[3]["content"] and grading[2]["content"].startswith("{")
    assert grading[-1] == {"role": "assistant", "content": GRADING_PREFILL}
    assert parse_grade(grading[2]["content"]).source == "bare"


def test_proposal_without_a_closing_answer_tag_still_parses():
    assert parse_proposal("<think>x</think>" + PROPOSAL.split("</think>")[1], TaskType.CODE_O,
                          min_inputs_code_f=2) is not None
    assert parse_proposal("<think>x<answer>```python\ndef f(x):\n    return x\n```\n```input\n1"
                          "\n```", TaskType.CODE_O, min_inputs_code_f=2) is None  # in thinking


def test_episode_puts_every_prefill_back_before_parsing(executor):
    backend = ReplyBackend({"propose": PROPOSAL, "solve": "3 * 2</think><answer>8</answer>",
                            "critique": CRITIQUE, "grade": GRADE})
    buffers = TaskBuffers({TaskType.CODE_O: [DOUBLE]}, capacity=4)
    options = _options()
    _, _, checks, _ = propose(backend, executor, buffers, options, 0, random.Random(0), 0)
    assert [c.valid for c in checks] == [True, True]
    # the same text without its prefill has no <think> block: malformed
    assert parse_proposal(PROPOSAL, TaskType.CODE_O, min_inputs_code_f=2) is None
    math = MathTask("What is 2 + 2?", "", "4")
    tasks = [DOUBLE, math]
    solved, _ = solve(backend, tasks, options,
                      builtin_rewards(executor, options, Alphas(0.5, 0.5)), RewardState(1, 1), 1)
    assert [s.well_formed for s in solved] == [True, True]
    samples, grader_failures = critique(backend, tasks, solved, options, Alphas(0.5, 0.5), 2)
    assert [s.well_formed for s in samples] == [True, True] and grader_failures == 0
    assert [s.info["creativity"] for s in samples] == [0.6, 0.6]
    assert [s.info["verdict"] for s in samples] == [False, False]
    assert not parse_critique(CRITIQUE).well_formed  # no <think> without the prefill


def test_critique_sees_the_task_without_the_solvers_response_format():
    task = MathTask("What is 2 + 2?", "", "4")
    assert task_statement(task) == "What is 2 + 2?"
    assert solve_prompt(task).startswith(task_statement(task)) and "<answer>" in solve_prompt(task)
    assert "<answer> and </answer>" not in critique_messages(task_statement(task), "s")[-2]["content"]


# What a model writes after the scaffold's prefill: the program's body on, then an input block.
SCAFFOLDED = "def f(xs):\n    return sorted(xs)\n```\n```input\n[3, 1, 2]\n```\n```input\n[0]\n```"


@pytest.mark.parametrize("task_type", CODE_TASK_TYPES)
def test_scaffolded_proposer_turn_opens_the_program_block(executor, task_type):
    messages = propose_messages(task_type, [DOUBLE], scaffold=True)
    prefill = messages[-1]["content"]
    assert prefill == propose_prefill(True) != PROPOSE_PREFILL
    assert prefill.startswith(f"<think>{PROPOSE_SCAFFOLD_THINK}</think><answer>")
    assert prefill.endswith("```python\n")
    example = messages[2]["content"]  # the worked proposal shows the same scaffold
    assert example.startswith(prefill)
    assert validate_proposals([example], [task_type], executor, min_inputs_code_f=2)[0].valid


def test_scaffolded_episode_validates_the_blocks_the_model_wrote(executor):
    backend = ReplyBackend({"propose": SCAFFOLDED})
    buffers = TaskBuffers({TaskType.CODE_O: [DOUBLE], TaskType.CODE_F: []}, capacity=4)
    options = _options(problem_types=(TaskType.CODE_O, TaskType.CODE_F), propose_scaffold=True)
    _, _, checks, types = propose(backend, executor, buffers, options, 0, random.Random(0), 0)
    assert types == [TaskType.CODE_O, TaskType.CODE_F]
    assert [c.valid for c in checks] == [True, True]
    assert checks[0].task.inputs == ("[3, 1, 2]",) and checks[0].task.outputs == ("[1, 2, 3]",)
    assert checks[1].task.inputs == ("[3, 1, 2]", "[0]") and checks[1].task.message == ""
    assert "Message:" not in task_statement(checks[1].task)  # no hint, no empty hint line
    assert all(m[-1]["content"].endswith("```python\n") for m in backend.seen)
    # unscaffolded, the same text has no <think> block before its blocks: malformed
    plain, _, plain_checks, _ = propose(backend, executor, buffers,
                                        _options(problem_types=(TaskType.CODE_O,)), 0,
                                        random.Random(0), 0)
    assert plain[0][-1]["content"] == PROPOSE_PREFILL and not plain_checks[0].well_formed
