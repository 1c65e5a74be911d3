#!/usr/bin/env python3
"""metatune's Hugging Face loader (core/graph/hf_checkpoint.cpp) against transformers itself.

For each small random-weight decoder below: transformers makes the model from a config,
save_pretrained() writes the folder (config.json + model.safetensors, as transformers writes
them), transformers computes the logits of a fixed prompt from that folder (reloaded, in
float64) and greedy-generates N tokens; then `metatune model run --hf DIR --tokens ...
--save-output X.npy` gives metatune's logits of every position and `metatune model generate
--hf DIR --prompt-ids ... --ignore-eos` its greedy tokens, and the two are compared.

    .venv/bin/python check.py [--metatune build/bin/metatune] [--models a,b] [--keep DIR]

Exit status 1 when any model's logits differ by more than --tol x max|ref| (or a folder is
refused by the loader, or the greedy tokens differ where transformers' top two logits are not
within that tolerance of each other).
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

SMALL = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=128, max_position_embeddings=256)

# name -> (config class, model class, extra config fields, prompt length)
MODELS = {
    "llama": (LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False), 16),
    "llama_llama3_rope_bias": (LlamaConfig, LlamaForCausalLM, dict(
        tie_word_embeddings=False, attention_bias=True, mlp_bias=True,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64}), 16),
    "qwen2_tied": (Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True), 16),
    "mistral_window8": (MistralConfig, MistralForCausalLM, dict(
        tie_word_embeddings=False, sliding_window=8), 24),
}
# The same folder as llama_llama3_rope_bias with config.json's rope fields rewritten in
# transformers 4's form (rope_theta and rope_scaling at the top) when transformers wrote
# transformers 5's rope_parameters: the loader's other path. Not transformers' own output.
V4_VARIANT = "llama_llama3_rope_bias_v4fields"


def init_weights(model, seed):
    """Random weights larger than transformers' default init (std 0.02), so that attention is
    far from uniform and the logits spread: linear weights std 0.15, embeddings 0.5, biases
    0.1, norm weights 1 + 0.1 N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if "norm" in name:
                v = 1.0 + 0.1 * r
            elif name.endswith(".bias"):
                v = 0.1 * r
            elif "embed_tokens" in name:
                v = 0.5 * r
            else:
                v = 0.15 * r
            p.copy_(v.to(p.dtype))


def prompt_ids(n, vocab, seed):
    g = np.random.default_rng(seed)
    return [int(x) for x in g.integers(3, vocab, size=n)]  # past bos/eos/pad (0..2)


def hf_reference(folder, ids, new_tokens):
    """transformers' logits of `ids` (float64 and float32 forwards of the reloaded folder), its
    greedy generate() tokens (float64, with its cache) and, along that greedy sequence, the
    margin between the top two logits at each step (float64, whole-sequence forward)."""
    out = {}
    for dtype in (torch.float64, torch.float32):
        m = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
        m = m.to(dtype).eval()
        with torch.no_grad():
            logits = m(torch.tensor([ids])).logits[0]
        out[str(dtype).split(".")[-1]] = logits.double().numpy()
        if dtype == torch.float64:
            gc = copy.deepcopy(m.generation_config)
            gc.do_sample = False
            gc.max_new_tokens = new_tokens
            gc.min_new_tokens = 0
            gc.eos_token_id = None  # a fixed count, as metatune's --ignore-eos
            gc.pad_token_id = 0
            with torch.no_grad():
                seq = m.generate(torch.tensor([ids]), generation_config=gc)
            greedy = [int(t) for t in seq[0, len(ids):]]
            with torch.no_grad():
                full = m(seq).logits[0, len(ids) - 1:-1].double().numpy()
            top2 = np.sort(full, axis=-1)[:, -2:]
            out["greedy"] = greedy
            out["greedy_margin"] = (top2[:, 1] - top2[:, 0]).tolist()
            out["greedy_max_abs"] = float(np.abs(full).max())
            out["manual_greedy"] = [int(t) for t in full.argmax(-1)]
        out["class"] = type(m).__name__
    return out


def hf_logits64(folder, ids, zero_bias=(), **overrides):
    m = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", **overrides)
    m = m.double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(".bias") and any(z in name for z in zero_bias):
                p.zero_()
        return m(torch.tensor([ids])).logits[0].numpy()


def controls(name, folder, ids, ref):
    """How far transformers' own logits move when the feature a model is here for is taken away
    (so that a loader ignoring it would fail the check): label -> max abs logit difference."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    no_scaling = ({"rope_parameters": {"rope_type": "default",
                                       "rope_theta": cfg["rope_parameters"].get("rope_theta", 1e4)}}
                  if "rope_parameters" in cfg else {"rope_scaling": None})
    cases = {
        "llama": {"rope_theta 500000 instead of 10000": (
            dict(rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
            if "rope_parameters" in cfg else dict(rope_theta=500000.0))},
        "llama_llama3_rope_bias": {"without the llama3 rope scaling": no_scaling,
                                   "without the attention and mlp biases": dict(
                                       zero_bias=("self_attn.", "mlp."))},
        "qwen2_tied": {"without the q/k/v biases": dict(zero_bias=("self_attn.",))},
        "mistral_window8": {"without the sliding window": dict(sliding_window=None)},
    }
    out = {}
    for label, kw in cases.get(name, {}).items():
        out[label] = float(np.abs(hf_logits64(folder, ids, **kw) - ref).max())
    return out


def run_cmd(cmd, timeout=300):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.time() - t0


def loader_error(text):
    """The lines of metatune's output that say why it stopped (not its info log)."""
    lines = [l for l in text.splitlines() if l.strip() and "[info]" not in l and "built " not in l]
    return "\n".join(lines[-6:])


def metatune_logits(metatune, folder, ids, implementations, work):
    npy = os.path.join(work, f"logits_{implementations}.npy")
    cmd = [metatune, "model", "run", "--hf", folder, "--tokens", ",".join(map(str, ids)),
           "--repeats", "1", "-q", "--log-level", "warn", "--implementations", implementations,
           "--save-output", npy]
    p, secs = run_cmd(cmd)
    if p.returncode != 0 or not os.path.exists(npy):
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}", cmd, secs
    a = np.load(npy)
    return a.reshape(-1, a.shape[-1]).astype(np.float64), None, cmd, secs


def metatune_generate(metatune, folder, ids, new_tokens, work):
    report = os.path.join(work, "generate.json")
    cmd = [metatune, "model", "generate", "--hf", folder, "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new_tokens), "--ignore-eos", "--greedy", "-q",
           "--log-level", "warn", "--report-json", report]
    p, secs = run_cmd(cmd)
    if p.returncode != 0 or not os.path.exists(report):
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}", cmd, secs
    with open(report) as f:
        return [int(t) for t in json.load(f)["new_tokens"]], None, cmd, secs


def rewrite_v4_fields(src, dst):
    """Copy folder src to dst with config.json's rope_parameters spelled as transformers 4 did:
    rope_theta at the top, the scaling (without rope_theta) as rope_scaling. Returns False when
    src's config has no rope_parameters (transformers 4 wrote those fields itself)."""
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    if "rope_parameters" not in cfg:
        return False
    shutil.copytree(src, dst)
    rp = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rp.pop("rope_theta", 10000.0)
    cfg["rope_scaling"] = None if rp.get("rope_type", "default") == "default" else rp
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    return True


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metatune", default=os.environ.get("METATUNE",
                                                         os.path.join(root, "build/bin/metatune")))
    ap.add_argument("--models", default=",".join(list(MODELS) + [V4_VARIANT]),
                    help="comma-separated, of: " + ", ".join(list(MODELS) + [V4_VARIANT]))
    ap.add_argument("--implementations", default="library,untuned",
                    help="metatune model run --implementations values to compare (comma-separated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-3, help="max |metatune - ref| / max |ref|")
    ap.add_argument("--keep", help="write the folders here (default: a temporary folder, removed)")
    ap.add_argument("--json", help="write the results as JSON to this file")
    args = ap.parse_args()
    if not os.access(args.metatune, os.X_OK):
        sys.exit(f"check.py: {args.metatune} is not an executable (build metatune first)")
    torch.manual_seed(args.seed)
    base = args.keep or tempfile.mkdtemp(prefix="mt_transformers_check.")
    os.makedirs(base, exist_ok=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; metatune "
          f"{args.metatune}; folders in {base}; tolerance {args.tol:g} x max|ref|", flush=True)
    results, failed = [], False
    wanted = [m for m in args.models.split(",") if m]
    for name in wanted:
        if name not in MODELS and name != V4_VARIANT:
            sys.exit(f"check.py: unknown model {name}")
    for name in wanted:
        r = {"model": name}
        results.append(r)
        folder = os.path.join(base, name)
        work = os.path.join(base, name + ".out")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        if name == V4_VARIANT:
            src_name = "llama_llama3_rope_bias"
            src = os.path.join(base, src_name)
            if not os.path.exists(os.path.join(src, "config.json")):
                print(f"\n== {name}: needs {src_name} first (skipped)")
                r["skipped"] = True
                continue
            if not rewrite_v4_fields(src, folder):
                print(f"\n== {name}: transformers wrote transformers 4's fields itself (skipped)")
                r["skipped"] = True
                continue
            ids = prompt_ids(MODELS[src_name][3], SMALL["vocab_size"], args.seed + 1000)
            r["note"] = f"{src_name}'s folder, config.json's rope_parameters rewritten as rope_theta + rope_scaling"
        else:
            cfg_cls, model_cls, extra, n = MODELS[name]
            cfg = cfg_cls(**SMALL, **extra)
            k = list(MODELS).index(name)  # the same weights whichever --models are run
            torch.manual_seed(args.seed + k)
            model = model_cls(cfg)
            init_weights(model, args.seed + k)
            model.save_pretrained(folder, safe_serialization=True)
            ids = prompt_ids(n, SMALL["vocab_size"], args.seed + 1000)
        with open(os.path.join(folder, "config.json")) as f:
            saved = json.load(f)
        rope_keys = {k: saved[k] for k in ("rope_theta", "rope_scaling", "rope_parameters",
                                           "sliding_window", "tie_word_embeddings",
                                           "attention_bias", "mlp_bias") if k in saved}
        r.update(folder=folder, prompt=ids, config_fields=rope_keys,
                 files=sorted(os.listdir(folder)))
        print(f"\n== {name}: {len(ids)}-token prompt; config.json {json.dumps(rope_keys)}", flush=True)
        ref = hf_reference(folder, ids, args.new_tokens)
        r["hf_class"] = ref["class"]
        r64, r32 = ref["float64"], ref["float32"]
        scale = float(np.abs(r64).max())
        r["hf_f32_vs_f64_max_abs"] = float(np.abs(r32 - r64).max())
        r["ref_max_abs_logit"] = scale
        r["ref_next_token"] = int(r64[-1].argmax())
        print(f"   transformers ({ref['class']}, eager attention): max|logit| {scale:.4f}; its own "
              f"float32 vs float64: max abs diff {r['hf_f32_vs_f64_max_abs']:.3g}; next token "
              f"{r['ref_next_token']}")
        if name != V4_VARIANT:
            r["controls"] = controls(name, folder, ids, r64)
            for label, d in r["controls"].items():
                print(f"   control: transformers {label}: max abs logit diff {d:.3g} from the above")
        r["runs"] = {}
        for impl in [x for x in args.implementations.split(",") if x]:
            got, err, cmd, secs = metatune_logits(args.metatune, folder, ids, impl, work)
            run = {"command": " ".join(cmd), "seconds": round(secs, 2)}
            r["runs"][impl] = run
            if err is not None:
                run["error"] = err
                failed = True
                print(f"   metatune model run ({impl}): FAILED ({secs:.1f} s)\n      " +
                      err.replace("\n", "\n      "))
                continue
            if got.shape != r64.shape:
                run["error"] = f"logits shape {list(got.shape)}, {list(r64.shape)} expected"
                failed = True
                print(f"   metatune model run ({impl}): {run['error']}")
                continue
            diff = np.abs(got - r64)
            run["max_abs_diff"] = float(diff.max())
            run["rel"] = float(diff.max() / scale)
            run["last_max_abs_diff"] = float(diff[-1].max())
            run["argmax_agree_positions"] = int((got.argmax(-1) == r64.argmax(-1)).sum())
            run["next_token"] = int(got[-1].argmax())
            run["ok"] = run["rel"] <= args.tol
            failed |= not run["ok"]
            print(f"   metatune model run ({impl}): max abs logit diff {run['max_abs_diff']:.3g} "
                  f"(all {len(ids)} positions; {run['rel']:.2g} x max|ref|; last position "
                  f"{run['last_max_abs_diff']:.3g}); argmax agrees at "
                  f"{run['argmax_agree_positions']}/{len(ids)} positions; next token "
                  f"{run['next_token']}  [{'ok' if run['ok'] else 'MISMATCH'}] ({secs:.1f} s)")
        toks, err, cmd, secs = metatune_generate(args.metatune, folder, ids, args.new_tokens, work)
        r["greedy_hf"] = ref["greedy"]
        r["greedy_hf_full_recompute"] = ref["manual_greedy"]
        r["generate_command"] = " ".join(cmd)
        print(f"   greedy, transformers generate(do_sample=False): {ref['greedy']}")
        if ref["manual_greedy"] != ref["greedy"]:
            print(f"   (transformers' whole-sequence argmax along it: {ref['manual_greedy']})")
        if err is not None:
            r["generate_error"] = err
            failed = True
            print(f"   greedy, metatune model generate: FAILED ({secs:.1f} s)\n      " +
                  err.replace("\n", "\n      "))
            continue
        r["greedy_metatune"] = toks
        agree = toks == ref["greedy"]
        r["greedy_agree"] = agree
        note = ""
        if not agree:
            k = next(j for j, (a, b) in enumerate(zip(toks, ref["greedy"])) if a != b)
            margin = ref["greedy_margin"][k]
            near_tie = margin <= args.tol * ref["greedy_max_abs"]
            r["greedy_first_difference"] = {"step": k, "hf_top2_margin": margin,
                                            "near_tie": near_tie}
            note = (f" -- first differs at step {k}; transformers' top-two margin there "
                    f"{margin:.3g}" + (" (a near tie: not counted)" if near_tie else ""))
            failed |= not near_tie
        print(f"   greedy, metatune model generate --ignore-eos:    {toks}  "
              f"[{'agree' if agree else 'DIFFER'}]{note} ({secs:.1f} s)", flush=True)

    print("\n== summary (max abs logit difference, metatune vs transformers float64; greedy tokens)")
    for r in results:
        if r.get("skipped"):
            print(f"   {r['model']:34s} skipped")
            continue
        runs = ", ".join(f"{k} " + (f"{v['max_abs_diff']:.2g}" + ("" if v["ok"] else " MISMATCH")
                                     if "max_abs_diff" in v else "FAILED")
                         for k, v in r.get("runs", {}).items())
        g = ("FAILED" if "generate_error" in r else
             "agree" if r.get("greedy_agree") else "DIFFER")
        print(f"   {r['model']:34s} {runs}; greedy {g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                       "tolerance": args.tol, "results": results}, f, indent=2)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print("\nresult: " + ("MISMATCH or failure (see above)" if failed else "all agree"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
