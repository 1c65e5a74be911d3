"""A Hugging Face Llama checkpoint folder (config.json + model.safetensors) as bench/llama
reads it: the dimensions under config.json's names and the tensors as float32 arrays.

The same folder feeds metatune (`metatune model ... --hf DIR`), the ONNX graphs of
llama_graphs.py and the float64 forward of reference.py.
"""

import json
import os
from dataclasses import dataclass

import numpy as np
from safetensors.numpy import load_file

import bench_model


@dataclass
class LlamaFolder:
    path: str
    config: dict
    tensors: dict  # HF name -> float32 array, nn.Linear weights [out, in]

    @property
    def layers(self):
        return self.config["num_hidden_layers"]

    @property
    def dim(self):
        return self.config["hidden_size"]

    @property
    def heads(self):
        return self.config["num_attention_heads"]

    @property
    def kv_heads(self):
        return self.config.get("num_key_value_heads") or self.heads

    @property
    def head_dim(self):
        return self.config.get("head_dim") or self.dim // self.heads

    @property
    def vocab(self):
        return self.config["vocab_size"]

    @property
    def eps(self):
        return float(self.config.get("rms_norm_eps", 1e-6))

    @property
    def theta(self):
        return float(self.config.get("rope_theta", 10000.0))

    @property
    def max_positions(self):
        return self.config.get("max_position_embeddings", 2048)

    @property
    def name(self):
        return self.config.get("_name_or_path") or "llama"

    def t(self, name):
        return self.tensors[name]


def load(path):
    cfg_path = os.path.join(path, "config.json")
    with open(cfg_path) as f:
        config = json.load(f)
    if config.get("model_type") != "llama":
        raise ValueError(f"{cfg_path}: model_type '{config.get('model_type')}' (llama expected)")
    if config.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{cfg_path}: hidden_act '{config['hidden_act']}' (silu expected)")
    if config.get("rope_scaling"):
        raise ValueError(f"{cfg_path}: rope_scaling is not modelled here")
    if config.get("tie_word_embeddings"):
        raise ValueError(f"{cfg_path}: a tied LM head is not modelled here")
    raw = load_file(os.path.join(path, "model.safetensors"))
    tensors = {k: v.astype(np.float32, copy=False) for k, v in raw.items()}
    return LlamaFolder(path, config, tensors)


def prompt_ids(folder, n):
    """The prompt of the benchmark: the ids `metatune model run` makes up, (t*7919+11) % V."""
    return bench_model.default_tokens(n, folder.vocab)
