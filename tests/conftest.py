"""Shared test fixtures: offline Hugging Face settings and the tiny model built in seconds."""

from __future__ import annotations

import os

# Set before anything imports transformers/datasets/huggingface_hub: tests never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

# a fresh PostgreSQL database and a real `mlflow server` on it (skip without PostgreSQL)
from tests.team.team_testkit import mlflow_server, postgres_url  # noqa: E402, F401

# The user-message template the tiny test model was trained with; prompts rendered with it get
# well-formed answers ("... The answer is $1,234.00 million." then <|im_end|>).
TINY_PROMPT_TEMPLATE = "Context:\n{evidence}\n\nQuestion: {question}"


@pytest.fixture(scope="session")
def tiny_prompt_template() -> str:
    """The FinanceBench user-message template ``tiny_model_dir`` was trained on."""
    return TINY_PROMPT_TEMPLATE


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved HF model dir (tokenizer, chat template, generation_config eos ids), ~10-20 s to build.

    A ~150k-parameter Llama trained for 200 steps on a synthetic chat corpus of FinanceBench
    (and a few LIMO) rows. Greedy decoding of a FinanceBench prompt (``tiny_prompt_template``)
    gives a padded answer such as "Great question! The answer is $2,5.00 million." with digits,
    ended by ``<|im_end|>`` in well under 48 tokens; numbers are usually not right.
    """
    import torch

    # One thread: the tests share 2 cores with other test processes, and tiny ops gain nothing
    # from a second thread while oversubscribed OpenMP threads slow everything down.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _build_tiny_model(tmp_path_factory.mktemp("tiny_model"))
    finally:
        torch.set_num_threads(threads)


def _build_tiny_model(out_dir: Path) -> Path:
    from crsp_ops.data.financebench import load_financebench
    from crsp_ops.data.limo import load_limo
    from crsp_ops.models.chat_corpus import ChatCorpusSpec
    from crsp_ops.models.tiny_base_model import build_tiny_base_model
    from crsp_ops.models.tiny_llama import TinyLlamaSpec, TrainSpec

    finance = load_financebench("synthetic", synthetic_count=200, seed=0).rows
    limo = load_limo(
        "synthetic", synthetic_count=16, seed=0, hub_split="train", hub_revision=None
    ).rows
    report = build_tiny_base_model(
        out_dir,
        limo_examples=limo,
        financebench_examples=finance,
        corpus_spec=ChatCorpusSpec(
            padded_fraction=0.7,
            max_padding_phrases=2,
            prompt_template=TINY_PROMPT_TEMPLATE,
            seed=0,
        ),
        vocab_size=768,
        model_spec=TinyLlamaSpec(
            hidden_size=64,
            intermediate_size=192,
            num_layers=2,
            num_heads=2,
            num_kv_heads=1,
            max_seq_len=2048,  # the critic's conversation is over 1,000 of its tokens
        ),
        train_spec=TrainSpec(
            steps=200,
            batch_size=8,
            learning_rate=6e-3,
            warmup_steps=20,
            weight_decay=0.0,
            seed=0,
        ),
        on_step=None,
        show_progress=False,
    )
    return report.model_dir


# A chat-template switch in the style of a thinking model's: with enable_thinking=false the
# rendered prompt starts with a system line, so every prompt (prefilled ones included) changes.
THINKING_SWITCH = ("{% if enable_thinking is defined and not enable_thinking %}"
                   "{{ '<|im_start|>system\\nno thinking<|im_end|>\\n' }}{% endif %}")


@pytest.fixture(scope="session")
def thinking_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tiny_model_dir`` whose chat template reads ``enable_thinking`` (``THINKING_SWITCH``)."""
    import shutil

    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("thinking_model") / "model"
    shutil.copytree(tiny_model_dir, out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.chat_template.startswith("{{ bos_token }}")
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{{ bos_token }}", "{{ bos_token }}" + THINKING_SWITCH, 1)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hermetic OpenAI clients: a developer's OPENAI_BASE_URL / OPENAI_API_KEY never leak in."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
