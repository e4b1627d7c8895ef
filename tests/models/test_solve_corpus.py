"""The solve-format corpus: the trainer's exact conversation, slips at the set shares."""

from __future__ import annotations

from crsp_ops.crsp.tasks import solve_messages
from crsp_ops.crsp.tasks.task_types import MathTask
from crsp_ops.data.edge_math import generate_edge_examples
from crsp_ops.inference.hf_chat import encode_chat
from crsp_ops.models.chat_batches import IGNORE_INDEX, tokenize_sample
from crsp_ops.models.solve_corpus import SLIP_SHARES, exclude_questions, solve_samples
from crsp_ops.models.tokenizer import train_bpe_tokenizer


def render(question: str):
    return solve_messages(MathTask(question, "", ""))


def test_samples_are_the_trainers_conversation_with_a_worked_reply():
    problems = generate_edge_examples(count=8, seed=3)
    samples = solve_samples(problems, render=render, seed=0, slip_shares={})
    for problem, sample in zip(problems, samples, strict=True):
        messages = render(problem.example.question)
        assert sample.messages()[:-1] == messages[:-1]  # system, worked example, the task
        assert sample.assistant.startswith(messages[-1]["content"])  # the <think> prefill
        assert sample.assistant.endswith(f"<answer>{problem.example.answer}</answer>")


def test_slips_follow_the_family_shares_and_only_add_a_stray_minus():
    problems = generate_edge_examples(count=2000, seed=5)
    samples = solve_samples(problems, render=render, seed=0)
    clean = solve_samples(problems, render=render, seed=0, slip_shares={})
    slipped: dict[str, list[bool]] = {}
    for problem, sample, right in zip(problems, samples, clean, strict=True):
        answer = sample.assistant.rsplit("<answer>", 1)[1].removesuffix("</answer>")
        assert answer in (problem.example.answer, "-" + problem.example.answer)
        assert sample.assistant.split("<answer>")[0] == right.assistant.split("<answer>")[0]
        slipped.setdefault(problem.family, []).append(answer != problem.example.answer)
    for family, flags in slipped.items():
        assert abs(sum(flags) / len(flags) - SLIP_SHARES[family]) < 0.06, family


def test_held_out_questions_are_left_out():
    problems = generate_edge_examples(count=50, seed=1)
    held = {problems[0].example.question, problems[7].example.question}
    kept = exclude_questions(problems, held)
    assert len(kept) == 48 and not {p.example.question for p in kept} & held


def test_training_prompt_ids_are_the_inference_prompt_ids():
    """Trained on exactly what the trainer feeds: the prompt plus the <think> prefill token."""
    (sample,) = solve_samples(generate_edge_examples(count=1, seed=0), render=render, seed=0)
    tokenizer = train_bpe_tokenizer([m["content"] for m in sample.messages()] * 3,
                                    vocab_size=400)
    tokenized = tokenize_sample(sample, tokenizer)
    prompt = [i for i, label in zip(tokenized.input_ids, tokenized.labels, strict=True)
              if label == IGNORE_INDEX]
    inference_ids = encode_chat(tokenizer, render(sample.user.split("\n\n")[0]))[0]
    assert list(tokenized.input_ids[: len(inference_ids)]) == list(inference_ids)
    assert len(inference_ids) == len(prompt) + 1  # + the prefilled <think>, trained as reply
