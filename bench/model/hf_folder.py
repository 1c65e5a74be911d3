"""A Hugging Face checkpoint folder (config.json + model.safetensors) as bench/model reads it.

The same folder feeds metatune (`metatune model run --hf DIR`), the ONNX graphs of
onnx_graphs.py and the float64 reference of reference.py, so the three are compared on the same
weights. Tensor names are returned without the module prefix a task model adds ("transformer."
for GPT2LMHeadModel, "bert." for BertForMaskedLM), as core/graph/hf_checkpoint.cpp strips it.
"""

import json
import os
from dataclasses import dataclass

import numpy as np
from safetensors.numpy import load_file


@dataclass
class HfFolder:
    path: str
    model_type: str  # "gpt2" or "bert"
    config: dict
    tensors: dict  # name without prefix -> float32 array, as stored (GPT-2 Conv1D: [in, out])

    # The dimensions both models share, from config.json under either model's field names.
    @property
    def layers(self):
        return self.config["n_layer" if self.model_type == "gpt2" else "num_hidden_layers"]

    @property
    def dim(self):
        return self.config["n_embd" if self.model_type == "gpt2" else "hidden_size"]

    @property
    def heads(self):
        return self.config["n_head" if self.model_type == "gpt2" else "num_attention_heads"]

    @property
    def vocab(self):
        return self.config["vocab_size"]

    @property
    def eps(self):
        if self.model_type == "gpt2":
            return float(self.config.get("layer_norm_epsilon", 1e-5))
        return float(self.config.get("layer_norm_eps", 1e-12))

    @property
    def activation(self):
        """'gelu' (erf) or 'gelu_tanh', as metatune's loader maps config.json's field."""
        if self.model_type == "gpt2":
            act = self.config.get("activation_function", "gelu_new")
        else:
            act = self.config.get("hidden_act", "gelu")
        if act in ("gelu_new", "gelu_pytorch_tanh"):
            return "gelu_tanh"
        if act == "gelu":
            return "gelu"
        raise ValueError(f"{self.path}/config.json: activation '{act}' is not benchmarked here")

    @property
    def name(self):
        return self.config.get("_name_or_path") or self.model_type

    def t(self, name):
        return self.tensors[name]


def load(path):
    cfg_path = os.path.join(path, "config.json")
    with open(cfg_path) as f:
        config = json.load(f)
    model_type = config.get("model_type")
    if model_type not in ("gpt2", "bert"):
        raise ValueError(f"{cfg_path}: model_type '{model_type}' (gpt2 or bert)")
    raw = load_file(os.path.join(path, "model.safetensors"))
    prefix = "transformer." if model_type == "gpt2" else "bert."
    tensors = {}
    for name, value in raw.items():
        tensors[name[len(prefix):] if name.startswith(prefix) else name] = value.astype(
            np.float32, copy=False)
    return HfFolder(path, model_type, config, tensors)


def default_tokens(seq, vocab):
    """The ids `metatune model run` makes up without --tokens (hosts/cli/cmd_model.cpp)."""
    return [(t * 7919 + 11) % vocab for t in range(seq)]


def parse_tokens(text):
    return [int(x) for x in text.split(",") if x.strip()]


def input_ids(folder, seq, batch, tokens=None):
    """ids [batch, seq] int64: every row the same ids, as metatune fills a batch."""
    ids = tokens if tokens else default_tokens(seq, folder.vocab)
    return np.tile(np.asarray(ids, dtype=np.int64), (batch, 1))
