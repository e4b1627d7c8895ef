"""Shared fixtures: one real sandbox pool with short limits for every executor-backed test."""

import pytest

from crsp_ops.crsp.executor import SandboxExecutor, SandboxLimits

TEST_LIMITS = SandboxLimits(timeout_s=1.5, memory_mb=256, max_file_size_mb=1.0, max_processes=1,
                            max_output_chars=2000)


@pytest.fixture(scope="session")
def sandbox_limits():
    return TEST_LIMITS


@pytest.fixture()
def fresh_accelerator_state():
    """accelerate keeps one mixed precision per process: a bf16 run after an fp32 one resets it."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()
    yield
    AcceleratorState._reset_state()


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("sandbox")
    with SandboxExecutor(TEST_LIMITS, max_workers=2, cleanup_every=1, determinism_runs=2,
                         scratch_parent=scratch) as pool:
        yield pool


# ---- self-play trainer fixtures ---------------------------------------------------------------

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from crsp_ops.crsp.policy.generation import PolicyGeneration  # noqa: E402
from crsp_ops.inference.backend import GenerationBackend  # noqa: E402
from crsp_ops.inference.completions import Completion  # noqa: E402
from crsp_ops.inference.hf_chat import encode_chat  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# Every role's turn is prefilled (``<think>``; the grader's ``{"grade": ``), so the scripted
# texts are what a backend returns: the continuation after the prefill.
VALID_PROPOSAL = ("add one</think><answer>```python\ndef f(x):\n    return x + 1\n```\n"
                  "```input\n3\n```</answer>")
SCRIPTS = {  # role -> texts used in turn: a well-formed one and a malformed one give variance
    "propose": (VALID_PROPOSAL, "no blocks at all"),
    "solve": ("guess</think><answer>4</answer>", "just text"),
    "critique": ('check</think>Verdict: incorrect {"grade": 0.5, "rationale": "r"}', "lgtm"),
    "grade": ('0.7, "rationale": "tried"}',),
}


def script_role(messages) -> str:
    first = messages[0]["content"]
    if first.startswith("You review"):
        return "critique"
    if first.startswith("You grade"):
        return "grade"
    return "propose" if first.startswith("Propose") else "solve"


class ScriptedBackend(GenerationBackend):
    """Dummy twin of the in-process backend: scripted texts, real ids and real logprobs.

    Each response is tokenized and teacher-forced through the model, so its logprobs are the
    policy's own (``processed`` at temperature 1), like sampled ones.
    """

    def __init__(self, model, tokenizer) -> None:
        self.model, self.tokenizer, self.turn = model, tokenizer, 0
        self.calls = []  # (role, SamplingParams) of every generate call, in order

    def generate(self, conversations, params, deltas=None):
        out = []
        if conversations:
            self.calls.append((script_role(conversations[0]), params))
        for messages in conversations:
            texts = SCRIPTS[script_role(messages)]
            text = texts[self.turn % len(texts)]
            self.turn += 1
            out.append(self._completion(list(messages), text))
        return out

    def _completion(self, messages, text) -> Completion:
        prompt = encode_chat(self.tokenizer, messages)[0]
        response = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        response.append(self.tokenizer.eos_token_id)
        ids = torch.tensor([prompt + response])
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0, len(prompt) - 1 : -1]  # (R, V)
        logprobs = torch.log_softmax(logits.float(), -1).gather(
            1, torch.tensor(response)[:, None]).squeeze(1)
        return Completion(text=text, prompt_token_ids=tuple(prompt), token_ids=tuple(response),
                          logprobs=tuple(float(x) for x in logprobs), finish_reason="stop",
                          logprob_semantics="processed")


class ScriptedGeneration(PolicyGeneration):
    def __init__(self, model, tokenizer) -> None:
        self.backend = ScriptedBackend(model, tokenizer)

    def sync(self, step, model) -> bool:
        self.policy_step = step
        return False


SMALL_RUN = (
    "crsp.problem_types=code_o,math", "crsp.executor_max_workers=2",
    "crsp.executor_determinism_runs=1", "train.steps=1", "train.solver_samples=2",
    "train.proposals_per_step=2", "train.tasks_per_type=1", "train.critiques_per_task=1",
    "train.max_new_tokens_propose=8", "train.max_new_tokens_solve=8",
    "train.max_new_tokens_critique=8", "train.learning_rate=1e-3", "tracking.enabled=n",
    "train.temperature=1.0",  # ScriptedBackend's logprobs are at temperature 1: on-policy ratio 1
)


@pytest.fixture(scope="session")
def small_settings():
    """Factory: effective settings of a tiny self-play run plus extra ``section.key=value``."""
    from crsp_ops.config import load_settings

    def make(*extra):
        return load_settings(REPO, [*SMALL_RUN, *extra]).settings

    return make


@pytest.fixture()
def scratch_project(tmp_path, monkeypatch):
    """A project root with this repo's Kconfig tree and params, the run's MLflow store inside."""
    from crsp_ops.config import sync_params
    from crsp_ops.paths import copy_config_tree

    copy_config_tree(REPO, tmp_path)
    sync_params(tmp_path)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    return tmp_path
