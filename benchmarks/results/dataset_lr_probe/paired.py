"""Paired over word_problems' dev prompts: two probe runs' final models, greedy, as the trainer
scores them (the notebook's dataset learning-rate probe).

    python benchmarks/results/dataset_lr_probe/paired.py 1e-4 1e-5   # models in /tmp/lr_probe/
"""

import json
import sys
from pathlib import Path

from crsp_ops.config import load_settings
from crsp_ops.crsp.policy.generation import InProcessGeneration
from crsp_ops.crsp.rewards.functions import RewardState, load_reward_function
from crsp_ops.crsp.trainer.evaluation import score_heldout
from crsp_ops.crsp.trainer.learning_curve import paired_gain
from crsp_ops.crsp.user_task import tasks_from_rows
from crsp_ops.data.prompt_dataset import load_prompt_rows
from crsp_ops.models.loading import load_causal_lm

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "examples" / "word_problems"


def dev_verdicts(model_dir: str, task) -> list[bool]:
    """Each dev prompt's verdict for the model in ``model_dir`` (greedy, 32 tokens)."""
    model, tokenizer = load_causal_lm(model_dir)
    model.eval()
    backend = InProcessGeneration(model, tokenizer, device="cpu", batch_size=32).backend
    scores = score_heldout(backend, task.heldout, task.rewards, RewardState(12, 12),
                           max_new_tokens=32)
    return [check.correct for check in scores.checks]


def main() -> None:
    first, second = sys.argv[1:3]
    settings = load_settings(ROOT, ["tracking.enabled=n",
                                    f"train.dataset={TASK / 'train.jsonl'}"]).settings
    task = tasks_from_rows(
        load_prompt_rows(TASK / "train.jsonl"), load_prompt_rows(TASK / "dev.jsonl"),
        [load_reward_function(f"{TASK}/reward.py:exact_number", ROOT)], settings.train, 0)
    verdicts = {lr: dev_verdicts(f"/tmp/lr_probe/{lr}", task) for lr in (first, second)}
    gain = paired_gain(verdicts[second], verdicts[first])
    print(json.dumps({"diff": f"{first} - {second}", "value": round(gain.diff, 4),
                      "ci95": [round(gain.low, 4), round(gain.high, 4)],
                      "prompts": gain.tasks}))


if __name__ == "__main__":
    main()
