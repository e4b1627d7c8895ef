from __future__ import annotations

import pytest

from crsp_ops.data.financebench import render_question_prompt
from crsp_ops.data.financebench_synthetic import generate_financebench_examples
from crsp_ops.data.limo_synthetic import generate_limo_examples
from crsp_ops.models.chat_batches import IGNORE_INDEX, collate, tokenize_sample
from crsp_ops.models.chat_corpus import (
    ChatCorpusSpec,
    answer_sentence,
    build_chat_corpus,
    corpus_texts,
)
from crsp_ops.models.tokenizer import train_bpe_tokenizer

TEMPLATE = "Context:\n{evidence}\n\nQuestion: {question}"


def _corpus(padded_fraction, seed=0, n_finance=200, n_limo=20):
    return build_chat_corpus(
        limo_examples=generate_limo_examples(count=n_limo, seed=0),
        financebench_examples=generate_financebench_examples(count=n_finance, seed=0),
        spec=ChatCorpusSpec(
            padded_fraction=padded_fraction,
            max_padding_phrases=4,
            prompt_template=TEMPLATE,
            seed=seed,
        ),
    )


def test_terse_and_padded_variants_keep_the_answer():
    finance = {
        render_question_prompt(e, template=TEMPLATE): e
        for e in generate_financebench_examples(count=200, seed=0)
    }
    corpus = _corpus(0.5)
    assert len(corpus) == 220
    padded = [s for s in corpus if s.padded]
    assert 0.35 < len(padded) / len(corpus) < 0.65
    for sample in corpus:
        if sample.user not in finance:
            assert sample.assistant.startswith("<think>")  # a LIMO sample
            continue
        sentence = answer_sentence(finance[sample.user].answer)
        if sample.padded:
            assert sentence[1:] in sample.assistant and len(sample.assistant) > len(sentence)
        else:
            assert sample.assistant == sentence


def test_limo_samples_reason_in_think_then_box_the_answer():
    limo = [s for s in _corpus(0.0) if s.assistant.startswith("<think>\n")]
    assert len(limo) == 20
    assert all("</think>\nThe answer is \\boxed{" in s.assistant for s in limo)


def test_padded_fraction_extremes_and_determinism():
    assert not any(s.padded for s in _corpus(0.0))
    assert all(s.padded for s in _corpus(1.0))
    assert _corpus(0.5, seed=3) == _corpus(0.5, seed=3)
    assert _corpus(0.5, seed=3) != _corpus(0.5, seed=4)
    with pytest.raises(ValueError, match="padded_fraction"):
        ChatCorpusSpec(padded_fraction=1.5, max_padding_phrases=2, prompt_template="", seed=0)


def test_padding_makes_answers_longer_on_average():
    terse = _corpus(0.0)
    padded = _corpus(1.0)
    mean = lambda c: sum(len(s.assistant) for s in c) / len(c)  # noqa: E731
    assert mean(padded) > mean(terse) + 40


def test_labels_cover_exactly_the_reply_and_end_of_turn():
    corpus = _corpus(0.5, n_finance=20, n_limo=4)
    tokenizer = train_bpe_tokenizer(corpus_texts(corpus), vocab_size=400)
    for sample in corpus[:8]:
        tokenized = tokenize_sample(sample, tokenizer)
        prompt_ids = tokenizer.apply_chat_template(
            sample.messages()[:1], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        n_prompt = len(prompt_ids)
        # The training prompt is token-for-token what inference feeds the model.
        assert list(tokenized.input_ids[:n_prompt]) == list(prompt_ids)
        assert set(tokenized.labels[:n_prompt]) == {IGNORE_INDEX}
        reply = tokenized.labels[n_prompt:]
        assert reply[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
        assert tokenizer.decode(reply, skip_special_tokens=True) == sample.assistant

    batch = collate([tokenize_sample(s, tokenizer) for s in corpus[:3]], tokenizer.pad_token_id)
    lengths = batch["attention_mask"].sum(dim=1)
    assert batch["input_ids"].shape == batch["labels"].shape
    assert int(lengths.max()) == batch["input_ids"].shape[1]
    assert (batch["labels"][batch["attention_mask"] == 0] == IGNORE_INDEX).all()


def test_quote_evidence_opens_look_ups_with_the_stating_sentence():
    examples = generate_financebench_examples(count=60, seed=0)
    corpus = build_chat_corpus(
        limo_examples=[], financebench_examples=examples,
        spec=ChatCorpusSpec(padded_fraction=0.0, max_padding_phrases=1, prompt_template=TEMPLATE,
                            seed=0, quote_evidence=True))
    by_user = {render_question_prompt(e, template=TEMPLATE): e for e in examples}
    quoted = 0
    for sample in corpus:
        example = by_user[sample.user]
        sentence = answer_sentence(example.answer)
        assert sample.assistant.endswith(sentence)
        if example.question_reasoning == "Information extraction":
            figure = f"${int(example.answer[1:].split('.')[0].replace(',', '')):,} million"
            assert figure in sample.assistant.removesuffix(sentence)  # quoted before the answer
            quoted += 1
        elif sample.assistant != sentence:  # arithmetic answers rarely appear in the evidence
            assert sample.assistant.removesuffix(" " + sentence) in example.evidence_passage
    assert quoted > 10
