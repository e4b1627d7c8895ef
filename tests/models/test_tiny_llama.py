from __future__ import annotations

import pytest
import torch

from crsp_ops.data.financebench_synthetic import generate_financebench_examples
from crsp_ops.models.chat_batches import tokenize_sample
from crsp_ops.models.chat_corpus import ChatCorpusSpec, build_chat_corpus, corpus_texts
from crsp_ops.models.tiny_llama import (
    TinyLlamaSpec,
    TrainSpec,
    build_tiny_llama,
    lr_at,
    train_causal_lm,
)
from crsp_ops.models.tokenizer import train_bpe_tokenizer

SPEC = TinyLlamaSpec(
    hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1, max_seq_len=384
)


def _train_spec(steps=6, learning_rate=1e-2):
    return TrainSpec(
        steps=steps,
        batch_size=4,
        learning_rate=learning_rate,
        warmup_steps=2,
        weight_decay=0.0,
        seed=0,
    )


def test_lr_schedule_warms_up_then_decays_to_a_tenth():
    spec = TrainSpec(
        steps=100, batch_size=1, learning_rate=1.0, warmup_steps=10, weight_decay=0.0, seed=0
    )
    assert lr_at(0, spec) == pytest.approx(0.1)
    assert lr_at(9, spec) == pytest.approx(1.0)
    assert lr_at(10, spec) == pytest.approx(1.0)
    assert lr_at(99, spec) == pytest.approx(0.1, abs=1e-3)
    assert all(lr_at(s, spec) >= lr_at(s + 1, spec) for s in range(10, 99))


def test_specs_reject_inconsistent_values():
    with pytest.raises(ValueError, match="divisible"):
        TinyLlamaSpec(
            hidden_size=30,
            intermediate_size=8,
            num_layers=1,
            num_heads=4,
            num_kv_heads=1,
            max_seq_len=8,
        )
    with pytest.raises(ValueError, match="warmup_steps"):
        TrainSpec(steps=5, batch_size=1, learning_rate=1.0, warmup_steps=6, weight_decay=0, seed=0)


def test_training_logs_every_step_and_changes_every_parameter():
    corpus = build_chat_corpus(
        limo_examples=[],
        financebench_examples=generate_financebench_examples(count=16, seed=0),
        spec=ChatCorpusSpec(
            padded_fraction=0.5,
            max_padding_phrases=2,
            prompt_template="{evidence} {question}",
            seed=0,
        ),
    )
    tokenizer = train_bpe_tokenizer(corpus_texts(corpus), vocab_size=320)
    samples = [tokenize_sample(s, tokenizer) for s in corpus]
    model = build_tiny_llama(
        SPEC,
        vocab_size=len(tokenizer),
        bos_id=tokenizer.bos_token_id,
        eos_id=tokenizer.eos_token_id,
        pad_id=tokenizer.pad_token_id,
        seed=0,
    )
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    logged = []
    result = train_causal_lm(
        model,
        samples,
        spec=_train_spec(),
        pad_id=tokenizer.pad_token_id,
        on_step=lambda step, metrics: logged.append((step, metrics)),
        show_progress=False,
    )
    assert [step for step, _ in logged] == [1, 2, 3, 4, 5, 6]
    assert all({"loss", "learning_rate", "tokens_per_second"} <= set(m) for _, m in logged)
    assert [m["loss"] for _, m in logged] == list(result.losses)
    assert result.losses[-1] < result.losses[0]
    for name, param in model.named_parameters():
        assert not torch.equal(before[name], param), f"{name} did not change"
    assert result.num_parameters == sum(p.numel() for p in model.parameters())


def test_training_is_seeded():
    corpus = build_chat_corpus(
        limo_examples=[],
        financebench_examples=generate_financebench_examples(count=8, seed=0),
        spec=ChatCorpusSpec(
            padded_fraction=0.5, max_padding_phrases=2, prompt_template="{question}", seed=0
        ),
    )
    tokenizer = train_bpe_tokenizer(corpus_texts(corpus), vocab_size=300)
    samples = [tokenize_sample(s, tokenizer) for s in corpus]

    def run():
        model = build_tiny_llama(
            SPEC, vocab_size=len(tokenizer), bos_id=0, eos_id=1, pad_id=2, seed=0
        )
        return train_causal_lm(
            model, samples, spec=_train_spec(steps=3), pad_id=2, on_step=None, show_progress=False
        ).losses

    assert run() == run()
