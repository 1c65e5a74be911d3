#!/usr/bin/env python3
"""Writes a Hugging Face Llama checkpoint folder with random weights.

  make_checkpoint.py OUT_DIR [--preset small|tiny] [--seed S]

config.json as LlamaForCausalLM's (grouped-query attention: fewer key/value heads than heads,
SwiGLU MLP, RMSNorm, rotary positions with rope_theta, untied LM head) and model.safetensors in
the names and layouts Hugging Face saves: nn.Linear weights [out, in] without biases,
model.embed_tokens / model.layers.N.{self_attn,mlp,...} / model.norm / lm_head. Weights are
normal with std 0.02, RMSNorm weights 1 + small noise, so the activations stay of order one and
no part of the forward is trivial. No tokenizer is written: the benchmark feeds token ids.

  small  about 125M parameters (hidden 768, 12 layers, 12 heads, 4 key/value heads,
         intermediate 2048, vocab 32000): the benchmark's model
  tiny   hidden 64, 2 layers, 4 heads, 2 key/value heads, intermediate 128, vocab 256: tests
"""

import argparse
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

import bench_model

PRESETS = {
    "small": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                  num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                  max_position_embeddings=2048),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                 max_position_embeddings=256),
}


def llama_config(sizes, preset, seed):
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        **sizes,
        "head_dim": sizes["hidden_size"] // sizes["num_attention_heads"],
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "float32",
        "_name_or_path": f"llama-{preset}",
        "metatune_bench": {"seed": seed, "weights": "random normal, std 0.02"},
    }


def llama_tensors(c, w):
    """Drawn in a fixed order, so one seed gives one checkpoint."""
    d, f = c["hidden_size"], c["intermediate_size"]
    dh = c["head_dim"]
    kv = c["num_key_value_heads"] * dh

    def norm(name):
        w.tensors[name] = 1 + w.rng.standard_normal(d, dtype=np.float32) * np.float32(0.05)

    w.weight("model.embed_tokens.weight", (c["vocab_size"], d))
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight")
        w.weight(p + "self_attn.q_proj.weight", (c["num_attention_heads"] * dh, d))
        w.weight(p + "self_attn.k_proj.weight", (kv, d))
        w.weight(p + "self_attn.v_proj.weight", (kv, d))
        w.weight(p + "self_attn.o_proj.weight", (d, c["num_attention_heads"] * dh))
        norm(p + "post_attention_layernorm.weight")
        w.weight(p + "mlp.gate_proj.weight", (f, d))
        w.weight(p + "mlp.up_proj.weight", (f, d))
        w.weight(p + "mlp.down_proj.weight", (d, f))
    norm("model.norm.weight")
    w.weight("lm_head.weight", (c["vocab_size"], d))


def write(out, preset="small", seed=0):
    """The folder OUT (created); returns (config, parameter count)."""
    config = llama_config(dict(PRESETS[preset]), preset, seed)
    w = bench_model.Writer(seed)
    llama_tensors(config, w)
    os.makedirs(out, exist_ok=True)
    # Weights first, config last: a folder with a config.json is complete.
    cfg_path = os.path.join(out, "config.json")
    if os.path.exists(cfg_path):
        os.remove(cfg_path)
    save_file(w.tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
    return config, len(w.tensors), sum(t.size for t in w.tensors.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", metavar="OUT_DIR", help="the folder to write (created)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    config, n_tensors, count = write(a.out, a.preset, a.seed)
    print(f"{a.out}: {config['_name_or_path']}, {n_tensors} tensors, "
          f"{count / 1e6:.1f}M parameters, seed {a.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
