#!/usr/bin/env python3
"""The float64 reference forward of a checkpoint folder, and outputs compared against it.

  reference.py --hf DIR [--seq N] [--batch B] [--tokens 1,2,3] [--tol T]
               --compare LABEL=FILE.npy [--compare ...]

A straightforward numpy forward written from the Hugging Face models' definitions (GPT-2:
pre-norm blocks, fused c_attn split into q, k, v, causal softmax, gelu_new, final ln_f, logits
= h wte^T; BERT: word + position + token-type-0 embeddings, LayerNorm, post-norm blocks, erf
GELU, the padding mask all ones), in float64 from the float32 weights. It shares no code with
onnx_graphs.py. Each FILE.npy (float32, C order: GPT-2 logits [B, S, vocab], BERT the last
hidden state [B, S, hidden]; `metatune model run --save-output` writes one) is compared with
it: max |got - ref| against tol * max |ref|. Prints one JSON line per comparison; exits 1 if
any fails.
"""

import argparse
import json
import math
import sys

import numpy as np

import hf_folder

DEFAULT_TOL = 1e-4


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(q, k, v, heads, allowed):
    """q, k, v [S, D]; allowed [S, S] booleans (query row, key column)."""
    s, d = q.shape
    dh = d // heads
    split = lambda x: x.reshape(s, heads, dh).transpose(1, 0, 2)  # noqa: E731
    scores = split(q) @ split(k).transpose(0, 2, 1) / math.sqrt(dh)
    scores = np.where(allowed[None], scores, -np.inf)
    return (softmax(scores) @ split(v)).transpose(1, 0, 2).reshape(s, d)


class Reference:
    def __init__(self, folder):
        self.f = folder
        self.w = {}  # float64 copies, made once per tensor

    def t(self, name):
        if name not in self.w:
            self.w[name] = self.f.t(name).astype(np.float64)
        return self.w[name]

    def act(self, x):
        return gelu(x) if self.f.activation == "gelu" else gelu_tanh(x)

    def gpt2_row(self, ids):
        f, t, eps = self.f, self.t, self.f.eps
        s = len(ids)
        h = t("wte.weight")[ids] + t("wpe.weight")[:s]
        causal = np.tril(np.ones((s, s), dtype=bool))
        d = f.dim
        for i in range(f.layers):
            p = f"h.{i}."
            n = layer_norm(h, t(p + "ln_1.weight"), t(p + "ln_1.bias"), eps)
            qkv = n @ t(p + "attn.c_attn.weight") + t(p + "attn.c_attn.bias")  # Conv1D
            a = attention(qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:], f.heads, causal)
            h = h + a @ t(p + "attn.c_proj.weight") + t(p + "attn.c_proj.bias")
            n = layer_norm(h, t(p + "ln_2.weight"), t(p + "ln_2.bias"), eps)
            u = self.act(n @ t(p + "mlp.c_fc.weight") + t(p + "mlp.c_fc.bias"))
            h = h + u @ t(p + "mlp.c_proj.weight") + t(p + "mlp.c_proj.bias")
        h = layer_norm(h, t("ln_f.weight"), t("ln_f.bias"), eps)
        return h @ t("wte.weight").T  # the LM head tied to the token table

    def bert_row(self, ids, mask):
        f, t, eps = self.f, self.t, self.f.eps
        s = len(ids)
        e = "embeddings."
        h = (t(e + "word_embeddings.weight")[ids] + t(e + "position_embeddings.weight")[:s] +
             t(e + "token_type_embeddings.weight")[0])
        h = layer_norm(h, t(e + "LayerNorm.weight"), t(e + "LayerNorm.bias"), eps)
        allowed = np.broadcast_to(mask[None, :] > 0.5, (s, s))
        for i in range(f.layers):
            p = f"encoder.layer.{i}."
            lin = lambda x, n: x @ t(p + n + ".weight").T + t(p + n + ".bias")  # noqa: E731
            q, k, v = (lin(h, "attention.self." + x) for x in ("query", "key", "value"))
            a = lin(attention(q, k, v, f.heads, allowed), "attention.output.dense")
            h = layer_norm(h + a, t(p + "attention.output.LayerNorm.weight"),
                           t(p + "attention.output.LayerNorm.bias"), eps)
            u = self.act(lin(h, "intermediate.dense"))
            h = layer_norm(h + lin(u, "output.dense"), t(p + "output.LayerNorm.weight"),
                           t(p + "output.LayerNorm.bias"), eps)
        return h

    def forward(self, ids, mask=None):
        """ids [B, S] -> GPT-2 logits [B, S, vocab] or BERT's last hidden state [B, S, D]."""
        rows = []
        for b in range(ids.shape[0]):
            if self.f.model_type == "gpt2":
                rows.append(self.gpt2_row(ids[b]))
            else:
                m = np.ones(ids.shape[1]) if mask is None else mask[b]
                rows.append(self.bert_row(ids[b], m))
        return np.stack(rows)


def compare(label, got, ref, tol, logits=False):
    """max |got - ref| within tol * max |ref|; a dict saying so."""
    out = {"output": label, "shape": list(got.shape), "tol_rel_to_max_abs_ref": tol}
    if tuple(got.shape) != tuple(ref.shape):
        out.update(ok=False, error=f"shape {list(got.shape)}, {list(ref.shape)} expected")
        return out
    err = np.abs(got.astype(np.float64) - ref)
    scale = float(np.abs(ref).max())
    out.update(max_abs_err=float(err.max()), max_abs_ref=scale,
               rel_err=float(err.max()) / scale if scale else float("inf"),
               ok=bool(np.isfinite(got).all() and err.max() <= tol * scale))
    if logits:  # what matters for a decoder: the most likely tokens agree
        out["argmax_agree"] = float((got.argmax(-1) == ref.argmax(-1)).mean())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hf", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--tokens", default="", help="comma-separated ids (default: metatune's)")
    ap.add_argument("--tol", type=float, default=DEFAULT_TOL)
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=FILE.npy")
    a = ap.parse_args(argv)
    if not a.compare:
        ap.error("nothing to compare: give --compare LABEL=FILE.npy")
    folder = hf_folder.load(a.hf)
    tokens = hf_folder.parse_tokens(a.tokens)
    seq = len(tokens) if tokens else a.seq
    ref = Reference(folder).forward(hf_folder.input_ids(folder, seq, a.batch, tokens))
    ok = True
    for item in a.compare:
        label, _, path = item.partition("=")
        if not path:
            ap.error(f"--compare {item}: LABEL=FILE.npy expected")
        r = compare(label, np.load(path), ref, a.tol, logits=folder.model_type == "gpt2")
        r.update(model=folder.name, file=path)
        print(json.dumps(r), flush=True)
        ok &= r["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
