"""The shared tiny_model_dir fixture keeps the promises other tests rely on."""

from __future__ import annotations

import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.data.financebench import load_financebench, render_question_prompt


def _greedy(model_dir, template, n_examples, max_new_tokens=48):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    stop_ids = set(model.generation_config.eos_token_id)
    examples = load_financebench("synthetic", synthetic_count=n_examples, seed=99).rows
    outputs = []
    for example in examples:
        messages = [{"role": "user", "content": render_question_prompt(example, template=template)}]
        inputs = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            generated = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        response = generated[0, inputs["input_ids"].shape[1] :].tolist()
        outputs.append((response, tokenizer.decode(response, skip_special_tokens=True), stop_ids))
    return outputs


def test_fixture_dir_has_standard_files(tiny_model_dir):
    names = {path.name for path in tiny_model_dir.iterdir()}
    assert {"config.json", "generation_config.json", "tokenizer.json"} <= names
    generation = json.loads((tiny_model_dir / "generation_config.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in generation["eos_token_id"]
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.chat_template


def test_fixture_greedy_answers_have_digits_and_end_of_turn(tiny_model_dir, tiny_prompt_template):
    outputs = _greedy(tiny_model_dir, tiny_prompt_template, n_examples=6)
    ended = [response[-1] in stop_ids for response, _, stop_ids in outputs]
    with_digits = [any(ch.isdigit() for ch in text) for _, text, _ in outputs]
    assert sum(ended) >= 5, outputs
    assert sum(with_digits) >= 5, outputs
