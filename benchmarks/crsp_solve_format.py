"""Share of well-formed solve rollouts at step 0 (``<think>…</think><answer>…</answer>``).

Samples the solve role on the seed tasks (code_o, code_i, math) exactly as the trainer's
temperature does, under three prompt variants, and counts responses the trainer's checks call
well-formed (``extract_think`` and ``extract_answer`` both succeed):

- ``trainer``: the messages ``crsp_ops.crsp.tasks.solve_messages`` builds today (user turn only);
- ``system_demo``: the format stated in a system message plus one worked user/assistant turn;
- ``system_demo_prefill``: the same with the assistant turn opened with ``<think>``.

    python benchmarks/crsp_solve_format.py --model models/converted [--samples 2]
        [--max-new-tokens 64] [--temperature 1.0] [--variants trainer system_demo_prefill]

Prints one JSON line: per variant, the well-formed count, the share with a 95% Wilson interval
and the generation time. Needs a converted model (``make install-real`` then ``crsp-ops
convert-model --set model.source=smollm2``); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
from transformers import AutoModelForCausalLM

from crsp_ops.crsp.critique import extract_think
from crsp_ops.crsp.tasks import solve_messages
from crsp_ops.crsp.tasks.answers import extract_answer
from crsp_ops.crsp.tasks.starter_tasks import SEED_CODE_I, SEED_CODE_O, STARTER_MATH
from crsp_ops.models.model_ref import load_tokenizer, resolve_model_dir

SYSTEM = "Reply in exactly this format: <think>short reasoning</think><answer>final answer</answer>"
DEMO = [
    {"role": "user", "content": "What is 6 times 7?\n\nReason step by step inside <think> and "
                                "</think>, then give only the final answer inside <answer> and "
                                "</answer>."},
    {"role": "assistant", "content": "<think>6 times 7 is 42.</think><answer>42</answer>"},
]
VARIANTS = ("trainer", "system_demo", "system_demo_prefill")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def prompt_text(tokenizer, task, variant: str) -> tuple[str, str]:
    """(prompt text, response prefix) of one task under ``variant``."""
    messages = solve_messages(task)
    if variant != "trainer":
        messages = [{"role": "system", "content": SYSTEM}, *DEMO, *messages]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prefix = "<think>" if variant.endswith("prefill") else ""
    return text + prefix, prefix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--samples", type=int, default=2, help="samples per task")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args()

    tokenizer = load_tokenizer(args.model)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(resolve_model_dir(args.model)).eval()
    tasks = [*SEED_CODE_O, *SEED_CODE_I, *STARTER_MATH]
    result = {"benchmark": "crsp_solve_format", "model": str(args.model), "tasks": len(tasks),
              "samples_per_task": args.samples, "max_new_tokens": args.max_new_tokens,
              "temperature": args.temperature, "variants": {}}
    for variant in args.variants:
        torch.manual_seed(args.seed)
        prompts = [prompt_text(tokenizer, task, variant) for task in tasks]
        encoded = tokenizer([p for p, _ in prompts], return_tensors="pt", padding=True,
                            add_special_tokens=False)
        started = time.perf_counter()
        with torch.no_grad():
            generated = model.generate(
                **encoded, max_new_tokens=args.max_new_tokens, do_sample=True,
                temperature=args.temperature, top_p=1.0, top_k=0,
                num_return_sequences=args.samples,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        texts = tokenizer.batch_decode(generated[:, encoded["input_ids"].shape[1]:],
                                       skip_special_tokens=True)
        prefixes = [prefix for _, prefix in prompts for _ in range(args.samples)]
        responses = [prefix + text for prefix, text in zip(prefixes, texts, strict=True)]
        ok = sum(extract_think(r) is not None and extract_answer(r) is not None
                 for r in responses)
        low, high = wilson(ok, len(responses))
        result["variants"][variant] = {
            "well_formed": ok, "n": len(responses), "share": round(ok / len(responses), 3),
            "ci95": [round(low, 3), round(high, 3)],
            "generate_s": round(time.perf_counter() - started, 1),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
