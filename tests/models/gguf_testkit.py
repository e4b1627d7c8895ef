"""Write a tiny Llama GGUF (weights, byte-level BPE tokenizer, chat template) with the gguf package.

The tensors follow llama.cpp's naming and its q/k row permutation, so a correct GGUF reader
rebuilds exactly the model the file was written from.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from crsp_ops.models.special_tokens import CHAT_TEMPLATE, CONTROL_TOKENS
from crsp_ops.models.tiny_llama import TinyLlamaSpec, build_tiny_llama
from crsp_ops.models.tokenizer import train_bpe_tokenizer

TEXTS = [
    "What was the revenue in 2023? The revenue was $1,234 million.",
    "Answer with a number. The operating margin rose to 12.5% from 11.0%.",
    "<think>Add the two values.</think> The total is 42.",
] * 20


def tiny_model_and_tokenizer(seed: int = 0) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A random tiny Llama (untied head, GQA) and a small byte-level BPE with a chat template."""
    tokenizer = train_bpe_tokenizer(TEXTS, vocab_size=300)
    spec = TinyLlamaSpec(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4,
                         num_kv_heads=2, max_seq_len=128)
    model = build_tiny_llama(
        spec, vocab_size=len(tokenizer), bos_id=tokenizer.bos_token_id,
        eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id, seed=seed,
    )
    return model.eval(), tokenizer


def _permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary layout for q/k rows (convert_hf_to_gguf.py ``LlamaModel.permute``)."""
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def write_tiny_gguf(path: Path, model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast,
                    *, chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """Write ``model`` and ``tokenizer`` as a float32 llama GGUF at ``path``."""
    config = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-test-llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_rope_freq_base(float(config.rope_parameters["rope_theta"])
                              if getattr(config, "rope_parameters", None)
                              else float(config.rope_theta))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    vocab = tokenizer.get_vocab()
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    control = set(CONTROL_TOKENS)
    types = [gguf.TokenType.CONTROL if t in control else gguf.TokenType.NORMAL for t in tokens]
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    if chat_template:
        writer.add_chat_template(chat_template)

    n_head, n_kv = config.num_attention_heads, config.num_key_value_heads
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    if not config.tie_word_embeddings:
        writer.add_tensor("output.weight", state["lm_head.weight"])
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        writer.add_tensor(f"blk.{i}.attn_norm.weight", state[p + "input_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.attn_q.weight",
                          _permute(state[p + "self_attn.q_proj.weight"], n_head))
        writer.add_tensor(f"blk.{i}.attn_k.weight",
                          _permute(state[p + "self_attn.k_proj.weight"], n_kv))
        writer.add_tensor(f"blk.{i}.attn_v.weight", state[p + "self_attn.v_proj.weight"])
        writer.add_tensor(f"blk.{i}.attn_output.weight", state[p + "self_attn.o_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", state[p + "post_attention_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", state[p + "mlp.gate_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_up.weight", state[p + "mlp.up_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_down.weight", state[p + "mlp.down_proj.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def reference_logits(model: LlamaForCausalLM, ids: list[int]) -> torch.Tensor:
    """Logits of ``model`` on one sequence, (T, V)."""
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]
