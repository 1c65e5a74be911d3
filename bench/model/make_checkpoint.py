#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint folder with random weights: config.json + model.safetensors.

  make_checkpoint.py --model gpt2-small|bert-base --out DIR [--seed S] [--tiny]

Names and layouts are those Hugging Face saves (and core/graph/hf_checkpoint.cpp reads):
GPT2LMHeadModel's "transformer."-prefixed tensors with Conv1D weights [in, out] and the LM head
tied to wte (so not stored); BertModel's tensors under "bert." (as BertForMaskedLM saves them,
without pooler or head), nn.Linear weights [out, in]. Weights are normal with std 0.02,
LayerNorm weights 1 + small noise, biases small, so that no part of the forward is trivial.
--tiny keeps the structure with small dimensions (quick checks of the harness).
"""

import argparse
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

SIZES = {
    "gpt2-small": dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024),
    "bert-base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                      intermediate_size=3072, vocab_size=30522, max_position_embeddings=512,
                      type_vocab_size=2),
}
TINY = {
    "gpt2-small": dict(n_layer=2, n_head=4, n_embd=32, vocab_size=101, n_positions=64),
    "bert-base": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                      intermediate_size=48, vocab_size=97, max_position_embeddings=64,
                      type_vocab_size=2),
}


class Writer:
    """Tensors drawn in a fixed order from one generator, so a seed gives one checkpoint."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.tensors = {}

    def weight(self, name, shape, std=0.02):
        self.tensors[name] = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def norm(self, name):
        d = self.tensors_dim
        self.tensors[name + ".weight"] = 1 + self.rng.standard_normal(d, dtype=np.float32) * 0.05
        self.tensors[name + ".bias"] = self.rng.standard_normal(d, dtype=np.float32) * 0.02

    def bias(self, name, n):
        self.weight(name, (n,), std=0.01)


def gpt2(c, w):
    d, f = c["n_embd"], 4 * c["n_embd"]
    w.tensors_dim = d
    p = "transformer."
    w.weight(p + "wte.weight", (c["vocab_size"], d))
    w.weight(p + "wpe.weight", (c["n_positions"], d), std=0.01)
    for i in range(c["n_layer"]):
        h = f"{p}h.{i}."
        w.norm(h + "ln_1")
        w.weight(h + "attn.c_attn.weight", (d, 3 * d))  # Conv1D: [in, out]
        w.bias(h + "attn.c_attn.bias", 3 * d)
        w.weight(h + "attn.c_proj.weight", (d, d))
        w.bias(h + "attn.c_proj.bias", d)
        w.norm(h + "ln_2")
        w.weight(h + "mlp.c_fc.weight", (d, f))
        w.bias(h + "mlp.c_fc.bias", f)
        w.weight(h + "mlp.c_proj.weight", (f, d))
        w.bias(h + "mlp.c_proj.bias", d)
    w.norm(p + "ln_f")
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], **c, "n_inner": None,
            "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
            "tie_word_embeddings": True}


def bert(c, w):
    d, f = c["hidden_size"], c["intermediate_size"]
    w.tensors_dim = d
    e = "bert.embeddings."
    w.weight(e + "word_embeddings.weight", (c["vocab_size"], d))
    w.weight(e + "position_embeddings.weight", (c["max_position_embeddings"], d))
    w.weight(e + "token_type_embeddings.weight", (c["type_vocab_size"], d))
    w.norm(e + "LayerNorm")
    for i in range(c["num_hidden_layers"]):
        h = f"bert.encoder.layer.{i}."
        for x in ("query", "key", "value"):
            w.weight(h + f"attention.self.{x}.weight", (d, d))  # nn.Linear: [out, in]
            w.bias(h + f"attention.self.{x}.bias", d)
        w.weight(h + "attention.output.dense.weight", (d, d))
        w.bias(h + "attention.output.dense.bias", d)
        w.norm(h + "attention.output.LayerNorm")
        w.weight(h + "intermediate.dense.weight", (f, d))
        w.bias(h + "intermediate.dense.bias", f)
        w.weight(h + "output.dense.weight", (d, f))
        w.bias(h + "output.dense.bias", d)
        w.norm(h + "output.LayerNorm")
    return {"model_type": "bert", "architectures": ["BertModel"], **c, "hidden_act": "gelu",
            "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0, "position_embedding_type": "absolute"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(SIZES))
    ap.add_argument("--out", required=True, help="the folder to write (created)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="small dimensions, same structure")
    a = ap.parse_args(argv)
    sizes = (TINY if a.tiny else SIZES)[a.model]
    w = Writer(a.seed)
    config = (gpt2 if a.model == "gpt2-small" else bert)(dict(sizes), w)
    config["_name_or_path"] = a.model + ("-tiny" if a.tiny else "")
    config["metatune_bench"] = {"seed": a.seed, "weights": "random normal, std 0.02"}
    os.makedirs(a.out, exist_ok=True)
    # Weights first, config last: a folder with a config.json is complete.
    cfg_path = os.path.join(a.out, "config.json")
    if os.path.exists(cfg_path):
        os.remove(cfg_path)
    save_file(w.tensors, os.path.join(a.out, "model.safetensors"), metadata={"format": "pt"})
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
    count = sum(t.size for t in w.tensors.values())
    print(f"{a.out}: {config['_name_or_path']}, {len(w.tensors)} tensors, "
          f"{count / 1e6:.1f}M parameters, seed {a.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
