"""Paired over dev prompts: the final models of the two probe runs, greedy, as the trainer scores."""
import json, sys
from pathlib import Path
sys.path.insert(0, "/work/main")
from crsp_ops.config import load_settings
from crsp_ops.crsp.policy.generation import InProcessGeneration
from crsp_ops.crsp.rewards.functions import RewardState, load_reward_function
from crsp_ops.crsp.trainer.evaluation import score_heldout
from crsp_ops.crsp.trainer.learning_curve import paired_gain
from crsp_ops.crsp.user_task import tasks_from_rows
from crsp_ops.data.prompt_dataset import load_prompt_rows
from crsp_ops.models.loading import load_causal_lm

root = Path("/work/main")
ex = root / "examples/word_problems"
settings = load_settings(root, ["tracking.enabled=n", f"train.dataset={ex/'train.jsonl'}"]).settings
task = tasks_from_rows(load_prompt_rows(ex / "train.jsonl"), load_prompt_rows(ex / "dev.jsonl"),
                       [load_reward_function(f"{ex}/reward.py:exact_number", root)], settings.train, 0)
verdicts = {}
for lr in sys.argv[1:]:
    model, tokenizer = load_causal_lm(f"/tmp/lr_probe/{lr}")[:2]
    model.eval()
    gen = InProcessGeneration(model, tokenizer, device="cpu", batch_size=32)
    scores = score_heldout(gen.backend, task.heldout, task.rewards, RewardState(12, 12), max_new_tokens=32)
    verdicts[lr] = [c.correct for c in scores.checks]
    print(lr, sum(verdicts[lr]) / len(verdicts[lr]), flush=True)
a, b = sys.argv[1:3]
g = paired_gain(verdicts[b], verdicts[a])
print(json.dumps({"diff": f"{a} - {b}", "value": round(g.diff, 4), "ci95": [round(g.low, 4), round(g.high, 4)], "prompts": g.tasks}))
