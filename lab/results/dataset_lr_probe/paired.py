"""Paired over a task's dev prompts: two probe runs' final models, greedy, as the trainer
scores them (the notebook's dataset learning-rate probes).

    python benchmarks/results/dataset_lr_probe/paired.py 1e-4 1e-5   # /tmp/lr_probe/<lr>
    python benchmarks/results/dataset_lr_probe/paired.py --task review_sentiment \
        /tmp/lr_probe/review_sentiment_1e-5 /tmp/lr_probe/review_sentiment_3e-5
"""

import argparse
import json
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
# each task's reward function and completion budget (its README's command)
TASKS = {"word_problems": ("exact_number", 32), "json_extraction": ("json_fields", 48),
         "review_sentiment": ("one_word_label", 16)}


def dev_verdicts(model_dir: Path, task, max_new_tokens: int) -> list[bool]:
    """Each dev prompt's verdict for the model in ``model_dir`` (greedy)."""
    model, tokenizer = load_causal_lm(model_dir)
    model.eval()
    backend = InProcessGeneration(model, tokenizer, device="cpu", batch_size=32).backend
    scores = score_heldout(backend, task.heldout, task.rewards, RewardState(12, 12),
                           max_new_tokens=max_new_tokens)
    return [check.correct for check in scores.checks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="word_problems")
    parser.add_argument("first", help="a model directory, or a rate under /tmp/lr_probe/")
    parser.add_argument("second")
    args = parser.parse_args()
    folder = ROOT / "examples" / args.task
    function, max_new_tokens = TASKS[args.task]
    settings = load_settings(ROOT, ["tracking.enabled=n",
                                    f"train.dataset={folder / 'train.jsonl'}"]).settings
    task = tasks_from_rows(
        load_prompt_rows(folder / "train.jsonl"), load_prompt_rows(folder / "dev.jsonl"),
        [load_reward_function(f"{folder}/reward.py:{function}", ROOT)], settings.train, 0)
    models = {name: Path(name) if Path(name).is_dir() else Path("/tmp/lr_probe") / name
              for name in (args.first, args.second)}
    verdicts = {name: dev_verdicts(path, task, max_new_tokens) for name, path in models.items()}
    gain = paired_gain(verdicts[args.second], verdicts[args.first])
    print(json.dumps({"task": args.task, "diff": f"{args.first} - {args.second}",
                      "value": round(gain.diff, 4),
                      "ci95": [round(gain.low, 4), round(gain.high, 4)],
                      "prompts": gain.tasks}))


if __name__ == "__main__":
    main()
