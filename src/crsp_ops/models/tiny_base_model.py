"""Build the tiny base model end to end: corpus -> tokenizer -> Llama -> standard HF model dir."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from transformers import GenerationConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from crsp_ops.data.examples import FinanceBenchExample, LimoExample
from crsp_ops.models.chat_batches import tokenize_sample
from crsp_ops.models.chat_corpus import (
    ChatCorpusSpec,
    ChatSample,
    build_chat_corpus,
    corpus_texts,
)
from crsp_ops.models.tiny_llama import (
    StepCallback,
    TinyLlamaSpec,
    TrainResult,
    TrainSpec,
    build_tiny_llama,
    train_causal_lm,
)
from crsp_ops.models.tokenizer import stop_token_ids, train_bpe_tokenizer


@dataclass(frozen=True)
class TinyModelReport:
    """What building the tiny model produced."""

    model_dir: Path
    num_parameters: int
    vocab_size: int
    num_samples: int  # conversations trained on
    num_too_long: int  # conversations left out for exceeding max_seq_len
    train: TrainResult


def build_tiny_base_model(
    out_dir: str | Path,
    *,
    limo_examples: Sequence[LimoExample],
    financebench_examples: Sequence[FinanceBenchExample],
    corpus_spec: ChatCorpusSpec,
    vocab_size: int,
    model_spec: TinyLlamaSpec,
    train_spec: TrainSpec,
    on_step: StepCallback | None,
    show_progress: bool,
    extra_samples: Sequence[ChatSample] = (),
) -> TinyModelReport:
    """Train tokenizer and model on the chat corpus and save them as an HF model directory.

    The directory loads with ``AutoTokenizer``/``AutoModelForCausalLM``; its
    ``generation_config.json`` lists ``<|im_end|>`` and ``<|endoftext|>`` as eos ids.

    Args:
        out_dir: where to save (created; existing files of the same names are overwritten).
        limo_examples: math rows for the corpus.
        financebench_examples: finance rows for the corpus (use the pool, not the held-out).
        corpus_spec: terse/padded mix, prompt template, seed.
        vocab_size: BPE vocabulary size.
        model_spec: model dimensions and maximum sequence length.
        train_spec: optimisation settings.
        on_step: per-step metrics callback (see ``train_causal_lm``).
        show_progress: draw a progress bar.
        extra_samples: further conversations (e.g. ``solve_corpus.solve_samples``).
    """
    corpus = build_chat_corpus(
        limo_examples=limo_examples, financebench_examples=financebench_examples, spec=corpus_spec
    ) + list(extra_samples)
    tokenizer = train_bpe_tokenizer(corpus_texts(corpus), vocab_size=vocab_size)
    tokenized = [tokenize_sample(sample, tokenizer) for sample in corpus]
    fitting = [s for s in tokenized if len(s.input_ids) <= model_spec.max_seq_len]
    if not fitting:
        raise ValueError(f"no conversation fits max_seq_len={model_spec.max_seq_len}")
    model = _untrained_model(model_spec, tokenizer, seed=train_spec.seed)
    result = train_causal_lm(
        model,
        fitting,
        spec=train_spec,
        pad_id=tokenizer.pad_token_id,
        on_step=on_step,
        show_progress=show_progress,
    )
    model_dir = save_model_dir(out_dir, model, tokenizer)
    return TinyModelReport(
        model_dir=model_dir,
        num_parameters=result.num_parameters,
        vocab_size=len(tokenizer),
        num_samples=len(fitting),
        num_too_long=len(tokenized) - len(fitting),
        train=result,
    )


def _untrained_model(
    model_spec: TinyLlamaSpec, tokenizer: PreTrainedTokenizerFast, *, seed: int
) -> LlamaForCausalLM:
    """A freshly initialised tiny Llama sized to ``tokenizer`` and using its special ids."""
    return build_tiny_llama(
        model_spec,
        vocab_size=len(tokenizer),
        bos_id=tokenizer.bos_token_id,
        eos_id=tokenizer.eos_token_id,
        pad_id=tokenizer.pad_token_id,
        seed=seed,
    )


def save_model_dir(
    out_dir: str | Path, model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast
) -> Path:
    """Save model, tokenizer (with chat template) and a greedy generation config."""
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=stop_token_ids(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
