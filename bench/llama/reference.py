#!/usr/bin/env python3
"""The float64 reference of a Llama checkpoint folder: forward, KV-cache decode, greedy tokens.

  reference.py --self-check [--hf DIR] [--prompt-len 12] [--new-tokens 12]
  reference.py --hf DIR [--prompt-ids 1,2,3 | --prompt-len 128] [--max-new-tokens 64]
               [--cached] [--out FILE.json]
  reference.py --hf DIR [prompt as above] [--generation FILE.json] [--tol 1e-4]
               --compare LABEL=FILE.npy|FILE.json [--compare ...]

A straightforward numpy forward written from Hugging Face's LlamaForCausalLM: token
embedding; per layer x + o_proj(attention(RoPE(q), RoPE(k), v)) on RMSNorm(x), then
x + down_proj(silu(gate_proj(n)) * up_proj(n)) on RMSNorm(x); the final RMSNorm and the
untied lm_head. RoPE is the rotate-half form HF's Llama applies (inv_freq = theta^(-2i/d),
cos/sin of cat(freqs, freqs), q * cos + rotate_half(q) * sin); grouped-query attention repeats
each key/value head for heads / kv_heads consecutive query heads (repeat_kv); the mask is
causal over absolute positions. All in float64 from the float32 weights; it shares no code
with llama_graphs.py.

Greedy generation recomputes the whole sequence each step (the reference the KV cache is
checked against) unless --cached; --self-check runs both on a checkpoint (a tiny one made in a
temporary folder without --hf) and checks that the cached decode's logits equal the
recomputed ones (float64, max |diff| <= 1e-9 x max |logit|), that a prefill split in two
chunks equals one, and that both give the same tokens. The generation is printed (or written
to --out) as JSON: prompt_tokens, new_tokens, min_margin (the smallest gap between the best
and the second-best logit over the steps: how close a greedy choice came to a tie), prompt.

--compare checks other implementations' outputs against it, one JSON line each (exit 1 if one
fails): FILE.npy, the prompt's logits [1, S, vocab] float32 (`metatune model bench
--save-outputs` writes them), within tol x max |ref| of the float64 forward; FILE.json, a
generation report with "new_tokens" (`metatune model generate --report-json`), the same
greedy tokens as the reference's generation (--generation, one written by --out before, or
made now). Each line's "verdict" reads "ok ..." or "FAIL ...".
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

import numpy as np

import bench_model
import llama_folder

SELF_CHECK_TOL = 1e-9


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


class KVCache:
    """Per layer the rotated keys and the values so far, [kv_heads, T, head_dim] each."""

    def __init__(self, layers):
        self.k = [None] * layers
        self.v = [None] * layers

    @property
    def length(self):
        return 0 if self.k[0] is None else self.k[0].shape[1]

    def append(self, layer, k, v):
        if self.k[layer] is None:
            self.k[layer], self.v[layer] = k, v
        else:
            self.k[layer] = np.concatenate([self.k[layer], k], axis=1)
            self.v[layer] = np.concatenate([self.v[layer], v], axis=1)
        return self.k[layer], self.v[layer]


class Llama:
    def __init__(self, folder):
        self.f = folder
        self.w = {}  # float64 copies, made once per tensor
        dh = folder.head_dim
        self.inv_freq = 1.0 / folder.theta ** (np.arange(0, dh, 2, dtype=np.float64) / dh)

    def t(self, name):
        if name not in self.w:
            self.w[name] = self.f.t(name).astype(np.float64)
        return self.w[name]

    def rope(self, x, positions):
        """x [heads, S, head_dim] rotated by the absolute positions [S]."""
        freqs = np.outer(positions.astype(np.float64), self.inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        return x * np.cos(emb)[None] + rotate_half(x) * np.sin(emb)[None]

    def attention(self, i, n, positions, cache):
        f, t = self.f, self.t
        s, H, KV, dh = n.shape[0], f.heads, f.kv_heads, f.head_dim
        p = f"model.layers.{i}.self_attn."
        split = lambda x, heads: x.reshape(s, heads, dh).transpose(1, 0, 2)  # noqa: E731
        q = self.rope(split(n @ t(p + "q_proj.weight").T, H), positions)
        k = self.rope(split(n @ t(p + "k_proj.weight").T, KV), positions)
        v = split(n @ t(p + "v_proj.weight").T, KV)
        k, v = cache.append(i, k, v)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)  # repeat_kv
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        allowed = np.arange(k.shape[1])[None, :] <= positions[:, None]  # causal, absolute
        scores = np.where(allowed[None], scores, -np.inf)
        ctx = (bench_model.softmax(scores) @ v).transpose(1, 0, 2).reshape(s, H * dh)
        return ctx @ t(p + "o_proj.weight").T

    def forward(self, ids, cache=None, last_only=False):
        """Logits [S, vocab] of ids [S] at positions cache.length..; the cache grows by S.
        last_only: the logits of the last position only, [1, vocab]."""
        f, t, eps = self.f, self.t, self.f.eps
        cache = cache if cache is not None else KVCache(f.layers)
        ids = np.asarray(ids, dtype=np.int64)
        positions = np.arange(cache.length, cache.length + len(ids))
        h = t("model.embed_tokens.weight")[ids]
        for i in range(f.layers):
            p = f"model.layers.{i}."
            h = h + self.attention(i, rms_norm(h, t(p + "input_layernorm.weight"), eps),
                                   positions, cache)
            n = rms_norm(h, t(p + "post_attention_layernorm.weight"), eps)
            u = silu(n @ t(p + "mlp.gate_proj.weight").T) * (n @ t(p + "mlp.up_proj.weight").T)
            h = h + u @ t(p + "mlp.down_proj.weight").T
        if last_only:
            h = h[-1:]
        return rms_norm(h, t("model.norm.weight"), eps) @ t("lm_head.weight").T


def margin(logits):
    top2 = np.sort(logits)[-2:]
    return float(top2[1] - top2[0])


class Generation:
    """Greedy tokens after a prompt, with the logits that chose each one."""

    def __init__(self, prompt):
        self.prompt = list(prompt)
        self.tokens, self.logits = [], []

    def choose(self, logits):
        self.logits.append(logits)
        self.tokens.append(int(np.argmax(logits)))

    def summary(self, method, seconds):
        return {"prompt_tokens": len(self.prompt), "new_tokens": self.tokens,
                "min_margin": min(margin(x) for x in self.logits), "method": method,
                "seconds": round(seconds, 2)}


def greedy_recompute(model, prompt, new_tokens):
    """Each step the whole sequence from scratch: no cache carried between steps."""
    g = Generation(prompt)
    for _ in range(new_tokens):
        g.choose(model.forward(g.prompt + g.tokens, last_only=True)[0])
    return g


def greedy_cached(model, prompt, new_tokens, prefill_chunks=1):
    """Prefill (in prefill_chunks pieces) then one token at a time against the KV cache."""
    g = Generation(prompt)
    cache = KVCache(model.f.layers)
    for chunk in np.array_split(np.asarray(prompt), prefill_chunks):
        logits = model.forward(chunk, cache)
    g.prompt_logits = logits  # the last chunk's
    g.choose(logits[-1])
    while len(g.tokens) < new_tokens:
        g.choose(model.forward([g.tokens[-1]], cache)[0])
    return g


def self_check(folder, prompt_len, new_tokens):
    model = Llama(folder)
    prompt = llama_folder.prompt_ids(folder, prompt_len)
    t0 = time.perf_counter()
    full = greedy_recompute(model, prompt, new_tokens)
    t1 = time.perf_counter()
    cached = greedy_cached(model, prompt, new_tokens)
    chunked = greedy_cached(model, prompt, new_tokens, prefill_chunks=2)
    t2 = time.perf_counter()
    ref = np.stack(full.logits)
    scale = float(np.abs(ref).max())
    out = {"model": folder.name, "hf": folder.path, "prompt_tokens": prompt_len,
           "new_tokens": new_tokens, "tol_rel_to_max_abs_ref": SELF_CHECK_TOL, "ok": True}
    for label, g in (("cached", cached), ("chunked_prefill", chunked)):
        diff = float(np.abs(np.stack(g.logits) - ref).max())
        same = g.tokens == full.tokens
        out[label] = {"max_abs_diff": diff, "rel_diff": diff / scale, "same_tokens": same}
        out["ok"] &= same and diff <= SELF_CHECK_TOL * scale
    # The prefill's own logits (every position) against single-sequence forwards of prefixes.
    some = sorted({1, prompt_len // 2, prompt_len})
    pdiff = max(float(np.abs(cached.prompt_logits[n - 1] -
                             model.forward(prompt[:n], last_only=True)[0]).max()) for n in some)
    out["prefill_prefixes"] = {"max_abs_diff": pdiff, "prefix_lengths": some}
    out["ok"] &= pdiff <= SELF_CHECK_TOL * scale
    out["tokens"] = full.tokens
    out["min_margin"] = min(margin(x) for x in full.logits)
    out["seconds"] = {"recompute": round(t1 - t0, 2), "cached_twice": round(t2 - t1, 2)}
    return out


def compare_logits(label, path, model, prompt, tol):
    got = np.load(path)
    ref = model.forward(prompt)[None]
    r = bench_model.compare(label, got, ref, tol, logits=True)
    if "error" in r:
        r["verdict"] = f"FAIL {r['error']}"
    else:
        r["verdict"] = f"{'ok' if r['ok'] else 'FAIL'} rel_err={r['rel_err']:.2e}"
    return r


def compare_tokens(label, path, generation):
    with open(path) as f:
        got = json.load(f).get("new_tokens", [])
    want = generation["new_tokens"]
    same = got == want
    r = {"output": label, "ok": same, "tokens": len(got), "expected": len(want)}
    if same:
        r["verdict"] = f"ok {len(got)} tokens equal"
    else:
        first = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y),
                     min(len(got), len(want)))
        r["first_difference"] = first
        r["verdict"] = (f"FAIL tokens differ from new token {first} "
                        f"({len(got)} given, {len(want)} expected)")
    return r


def compare_all(a, folder, prompt, n):
    """--compare's lines; True when all agree."""
    model = Llama(folder)
    generation = None
    if a.generation:
        with open(a.generation) as f:
            generation = json.load(f)
        if generation.get("prompt") != prompt or len(generation["new_tokens"]) < n:
            raise SystemExit(f"--generation {a.generation}: made for another prompt or length")
        generation["new_tokens"] = generation["new_tokens"][:n]
    ok = True
    for item in a.compare:
        label, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"--compare {item}: LABEL=FILE expected")
        if path.endswith(".npy"):
            r = compare_logits(label, path, model, prompt, a.tol)
        else:
            if generation is None:
                t0 = time.perf_counter()
                g = greedy_cached(model, prompt, n) if a.cached else greedy_recompute(
                    model, prompt, n)
                generation = g.summary("cached" if a.cached else "recompute",
                                       time.perf_counter() - t0)
            r = compare_tokens(label, path, generation)
            r["reference_min_margin"] = generation["min_margin"]
        r.update(model=folder.name, file=path)
        print(json.dumps(r), flush=True)
        ok &= r["ok"]
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hf", default="", help="a Llama folder (make_checkpoint.py)")
    ap.add_argument("--self-check", action="store_true",
                    help="cached decode == full recompute (a tiny checkpoint without --hf)")
    ap.add_argument("--prompt-ids", default="", help="comma-separated ids")
    ap.add_argument("--prompt-len", type=int, default=0,
                    help="without --prompt-ids: this many of metatune's made-up ids "
                         "(default 12 with --self-check, else 128)")
    ap.add_argument("--max-new-tokens", "--new-tokens", type=int, default=0,
                    help="default 12 with --self-check, else 64")
    ap.add_argument("--cached", action="store_true",
                    help="generate with the KV cache instead of recomputing every step")
    ap.add_argument("--out", default="", help="write the JSON here instead of printing it")
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=FILE",
                    help="FILE.npy: prompt logits; FILE.json: a generation's new_tokens")
    ap.add_argument("--generation", default="", metavar="FILE.json",
                    help="with --compare: the reference generation written by --out before")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="with --compare: max |got - ref| <= tol x max |ref| for logits")
    a = ap.parse_args(argv)

    if a.self_check:
        with tempfile.TemporaryDirectory() as tmp:
            if not a.hf:
                import make_checkpoint
                a.hf = os.path.join(tmp, "tiny")
                make_checkpoint.write(a.hf, "tiny", seed=0)
            result = self_check(llama_folder.load(a.hf), a.prompt_len or 12,
                                a.max_new_tokens or 12)
        text = json.dumps(result)
        ok = result["ok"]
    else:
        if not a.hf:
            ap.error("--hf DIR (or --self-check)")
        folder = llama_folder.load(a.hf)
        prompt = (bench_model.parse_tokens(a.prompt_ids) if a.prompt_ids else
                  llama_folder.prompt_ids(folder, a.prompt_len or 128))
        n = a.max_new_tokens or 64
        if a.compare:
            return 0 if compare_all(a, folder, prompt, n) else 1
        model = Llama(folder)
        t0 = time.perf_counter()
        g = greedy_cached(model, prompt, n) if a.cached else greedy_recompute(model, prompt, n)
        result = g.summary("cached" if a.cached else "recompute", time.perf_counter() - t0)
        result.update(model=folder.name, hf=a.hf, prompt=prompt)
        text = json.dumps(result)
        ok = True
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
