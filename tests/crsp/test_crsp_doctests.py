import doctest
import importlib

import pytest

MODULES = ["rewards", "alpha_schedule", "critique", "advantages", "trrpg", "algorithms",
           "executor.ast_guard", "tasks.answers", "tasks.prompts", "tasks.seeds",
           "task_buffer", "episode", "generation", "policy_update", "seeding", "limo_tasks",
           "heldout", "token_logprobs"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"crsp_ops.crsp.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
