"""build_rollouts on the tiny model's tokenizer: rollouts, and each one's baseline group."""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.crsp.selfplay.episode import RoleSample
from crsp_ops.crsp.selfplay.rollout_building import build_rollouts
from crsp_ops.inference.context import InferenceContext
from tests.crsp.conftest import ScriptedBackend


@pytest.fixture(scope="module")
def samples(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    backend = ScriptedBackend(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tokenizer)
    out = []
    for role, task_type, task_index, reward in (
            ("solve", "math", 0, 1.0), ("solve", "math", 0, -0.5), ("solve", "math", 1, -1.0),
            ("propose", "code_o", None, 0.5)):
        messages = ({"role": "user", "content": f"task {task_index}"},)
        completion = backend.generate([list(messages)], None)[0]
        info = {} if task_index is None else {"task_index": task_index}
        out.append(RoleSample(role, task_type, f"{role}/{task_index}", messages, completion,
                              reward, reward, True, reward > 0, info))
    return tokenizer, out


@pytest.mark.parametrize("baseline, expected", [
    ("task_type", ("math", "math", "math", "code_o")),
    ("task", (("math", 0), ("math", 0), ("math", 1), "code_o")),
])
def test_baseline_groups_follow_the_setting(samples, baseline, expected):
    tokenizer, role_samples = samples
    built = build_rollouts(role_samples, InferenceContext(tokenizer), baseline=baseline)
    assert built.skipped == 0 and len(built.rollouts) == 4
    assert built.roles == ("solve", "solve", "solve", "propose")
    assert built.baseline_groups == expected
    rewards = torch.tensor([r.episode_reward for r in built.rollouts])
    torch.testing.assert_close(rewards, torch.tensor([1.0, -0.5, -1.0, 0.5]))
