"""The solver's conversation: format in the system message, one worked example, ``<think>`` prefill."""

from __future__ import annotations

from crsp_ops.crsp.tasks import MathTask, check_solutions, solve_messages, solve_response
from crsp_ops.crsp.tasks.prompts import SOLVE_PREFILL

TASK = MathTask("What is 3 + 4?", "3 + 4 = 7", "7")


def test_solve_conversation_states_the_format_and_opens_the_thinking_block():
    messages = solve_messages(TASK)
    assert messages[0]["role"] == "system" and "<answer>" in messages[0]["content"]
    example = messages[2]["content"]  # the worked example is itself in the format
    assert example.startswith("<think>") and example.endswith("</answer>")
    assert messages[3] == {"role": "user", "content": messages[3]["content"]}
    assert "What is 3 + 4?" in messages[3]["content"]
    assert messages[-1] == {"role": "assistant", "content": SOLVE_PREFILL}


def test_generated_text_after_the_prefill_is_checked_as_the_whole_turn(executor):
    messages = solve_messages(TASK)
    texts = ["3 + 4 = 7.</think><answer>7</answer>", "3 + 4 = 8.</think><answer>8</answer>",
             "3 + 4 is seven", "3 + 4 = 7.</think>\n<answer>7",  # stopped before </answer>
             "maybe <answer>7"]  # an answer inside an unfinished thinking block is no answer
    checks = check_solutions([TASK] * 5, [solve_response(messages, t) for t in texts], executor)
    assert [(c.well_formed, c.correct) for c in checks] == [
        (True, True), (True, False), (False, False), (True, True), (False, False)]
    # without the prefill put back, the same text has no <think> block and is malformed
    assert not check_solutions([TASK], texts[:1], executor)[0].well_formed
