#!/usr/bin/env python3
"""ONNX Runtime's prefill latency and greedy decode speed on a Llama checkpoint folder.

  ort_llama.py --hf DIR [--prompt-len 128 | --prompt-ids 1,2,3] [--max-new-tokens 64]
               [--threads 2] [--repeats 10] [--warmup 3] [--generations 3]
               [--variants onnx,fused] [--check] [--tol 1e-4] [--reference FILE.json]

Per variant of llama_graphs.py (plain ONNX ops, or ONNX Runtime's contrib ops), one process,
onnxruntime on CPU (ORT_ENABLE_ALL, sequential, --threads intra-op threads):

  prefill  the prompt through the prefill graph: --warmup runs, then the median of --repeats
           (wall clock; the ids, the logits and the per-layer keys/values bound once)
  decode   greedy generation of --max-new-tokens after the prompt: the first new token from
           the prefill's last logits, every further one from one decode step against the KV
           cache the previous step returned (ONNX Runtime's own values, bound as the next
           inputs without a copy). tokens/s = decode steps / their wall time (binding, run and
           argmax included; the prefill is not); median over --generations runs

--check compares with reference.py's float64 forward (KV-cache path): the prefill's logits at
the last position (the prefill graph computes no others) and each decode step's logits (max |got - ref| <= tol x max |ref|), and the
greedy tokens; --reference FILE (reference.py's JSON, e.g. the recomputing generation) adds
its tokens to the comparison. The headline figures are ONNX Runtime at its best: the fastest
variant's prefill and the fastest variant's decode. Prints one JSON line; exits 1 when a check
fails.
"""

import argparse
import gc
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

import bench_model
import llama_folder
import llama_graphs
import reference

DEFAULT_TOL = 1e-4


def session(model, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


class Decoder:
    """A variant's prefill and decode sessions and the generation loop over them."""

    def __init__(self, folder, variant, threads):
        self.f, self.V = folder, folder.vocab
        self.names = llama_graphs.output_names(folder)
        t0 = time.perf_counter()
        self.prefill_sess = session(llama_graphs.build(folder, "prefill", variant), threads)
        gc.collect()
        self.decode_sess = session(llama_graphs.build(folder, "decode", variant), threads)
        gc.collect()
        self.session_s = time.perf_counter() - t0

    def prefill_binding(self, prompt):
        io = self.prefill_sess.io_binding()
        ids = np.asarray([prompt], dtype=np.int64)
        logits = np.empty((1, 1, self.V), dtype=np.float32)  # the last position's
        io.bind_cpu_input("input_ids", ids)
        io.bind_output("logits", "cpu", 0, np.float32, list(logits.shape), logits.ctypes.data)
        for name in self.names[1:]:
            io.bind_output(name, "cpu")
        return io, logits, ids

    def time_prefill(self, prompt, warmup, repeats):
        io, logits, _ids = self.prefill_binding(prompt)
        for _ in range(warmup):
            self.prefill_sess.run_with_iobinding(io)
        times, cpu = [], []
        for _ in range(max(1, repeats)):
            t0, c0 = time.perf_counter(), time.process_time()
            self.prefill_sess.run_with_iobinding(io)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return {"prefill_ms": round(1e3 * statistics.median(times), 3),
                "prefill_min_ms": round(1e3 * min(times), 3),
                "prefill_max_ms": round(1e3 * max(times), 3),
                "prefill_cpu_ms": round(1e3 * statistics.median(cpu), 3)}

    def generate(self, prompt, new_tokens):
        """(tokens, prefill logits [S, V], decode step logits [steps, V], decode seconds)"""
        io, prompt_logits, _ids = self.prefill_binding(prompt)
        self.prefill_sess.run_with_iobinding(io)
        cache = io.get_outputs()[1:]  # OrtValues: present key, value per layer
        tokens = [int(np.argmax(prompt_logits[0, -1]))]
        step_logits = []
        dec = self.decode_sess.io_binding()
        logits = np.empty((1, 1, self.V), dtype=np.float32)
        ids = np.empty((1, 1), dtype=np.int64)
        pos = np.empty((1,), dtype=np.int64)
        seconds = 0.0
        for step in range(new_tokens - 1):
            t0 = time.perf_counter()
            ids[0, 0], pos[0] = tokens[-1], len(prompt) + step
            dec.bind_cpu_input("input_ids", ids)
            dec.bind_cpu_input("position", pos)
            for i in range(self.f.layers):
                dec.bind_ortvalue_input(llama_graphs.past_name(i, "key"), cache[2 * i])
                dec.bind_ortvalue_input(llama_graphs.past_name(i, "value"), cache[2 * i + 1])
            # The cache outputs grow every step: unallocated, so ONNX Runtime makes them.
            dec.clear_binding_outputs()
            dec.bind_output("logits", "cpu", 0, np.float32, [1, 1, self.V], logits.ctypes.data)
            for name in self.names[1:]:
                dec.bind_output(name, "cpu")
            self.decode_sess.run_with_iobinding(dec)
            cache = dec.get_outputs()[1:]
            tokens.append(int(np.argmax(logits[0, 0])))
            seconds += time.perf_counter() - t0
            step_logits.append(logits[0, 0].copy())  # for the check, outside the timing
        steps = np.stack(step_logits) if step_logits else np.zeros((0, self.V), np.float32)
        return tokens, prompt_logits[0].copy(), steps, seconds


def check_variant(got_tokens, prompt_logits, step_logits, ref, tol, ref_tokens_extra):
    """The variant's outputs against the float64 reference's (a reference.Generation)."""
    out = {"tol_rel_to_max_abs_ref": tol}
    c = bench_model.compare("prefill", prompt_logits, ref.prompt_logits[-1:], tol, logits=True)
    out["prefill"] = {k: c[k] for k in ("ok", "max_abs_err", "rel_err", "argmax_agree",
                                        "error") if k in c}
    # Step k's logits are comparable while the tokens before it agree.
    agree = 0
    while agree < len(got_tokens) and got_tokens[agree] == ref.tokens[agree]:
        agree += 1
    n = min(len(step_logits), agree)
    if n:
        c = bench_model.compare("decode", step_logits[:n], np.stack(ref.logits[1:n + 1]), tol)
        out["decode"] = {k: c[k] for k in ("ok", "max_abs_err", "rel_err") if k in c}
        out["decode"]["steps_compared"] = n
    else:
        out["decode"] = {"ok": len(step_logits) == 0, "steps_compared": 0}
    out["same_tokens"] = got_tokens == ref.tokens
    if not out["same_tokens"]:
        out["first_token_mismatch"] = agree
    ok = out["prefill"]["ok"] and out["decode"]["ok"] and out["same_tokens"]
    for label, tokens in ref_tokens_extra.items():
        out[f"same_tokens_as_{label}"] = got_tokens == tokens
        ok &= got_tokens == tokens
    out["ok"] = bool(ok)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hf", required=True, help="a Llama folder made by make_checkpoint.py")
    ap.add_argument("--prompt-ids", default="", help="comma-separated ids")
    ap.add_argument("--prompt-len", type=int, default=128,
                    help="without --prompt-ids: this many of metatune's made-up ids")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads")
    ap.add_argument("--repeats", type=int, default=10, help="timed prefill runs")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--generations", type=int, default=3, help="timed greedy generations")
    ap.add_argument("--variants", default="onnx,fused")
    ap.add_argument("--check", action="store_true", help="compare with reference.py")
    ap.add_argument("--tol", type=float, default=DEFAULT_TOL)
    ap.add_argument("--reference", default="", metavar="FILE.json",
                    help="reference.py's generation JSON: its tokens must match too")
    a = ap.parse_args(argv)
    if a.max_new_tokens < 1:
        ap.error("--max-new-tokens: at least 1")

    folder = llama_folder.load(a.hf)
    prompt = (bench_model.parse_tokens(a.prompt_ids) if a.prompt_ids
              else llama_folder.prompt_ids(folder, a.prompt_len))
    ref, extra = None, {}
    if a.check:
        t0 = time.perf_counter()
        ref = reference.greedy_cached(reference.Llama(folder), prompt, a.max_new_tokens)
        ref_s = time.perf_counter() - t0
    if a.reference:
        with open(a.reference) as f:
            r = json.load(f)
        if r.get("prompt", prompt) != prompt:
            ap.error(f"--reference {a.reference}: made for another prompt")
        extra[r.get("method", "reference")] = r["new_tokens"][:a.max_new_tokens]

    result = {"model": folder.name, "hf": a.hf, "ort_version": ort.__version__,
              "threads": a.threads, "prompt_tokens": len(prompt),
              "max_new_tokens": a.max_new_tokens, "prefill_runs": a.repeats,
              "warmup": a.warmup, "generations": a.generations, "variants": {}}
    if ref is not None:
        result["reference_s"] = round(ref_s, 1)
        result["reference_min_margin"] = min(reference.margin(x) for x in ref.logits)
    for variant in [v for v in a.variants.split(",") if v]:
        if variant not in llama_graphs.VARIANTS:
            ap.error(f"--variants: unknown '{variant}' ({', '.join(llama_graphs.VARIANTS)})")
        dec = Decoder(folder, variant, a.threads)
        info = {"session_s": round(dec.session_s, 2)}
        info.update(dec.time_prefill(prompt, a.warmup, a.repeats))
        rates, first = [], None
        for _ in range(max(1, a.generations)):
            tokens, prompt_logits, step_logits, seconds = dec.generate(prompt, a.max_new_tokens)
            steps = len(step_logits)
            rates.append(steps / seconds if seconds > 0 else float("inf"))
            if first is None:
                first = (tokens, prompt_logits, step_logits)
            elif tokens != first[0]:
                info["unstable_tokens"] = True  # the same session gave other tokens
        info.update(decode_tokens_per_s=round(statistics.median(rates), 2),
                    decode_runs=[round(r, 2) for r in rates], decode_steps=len(first[2]),
                    new_tokens=first[0])
        if ref is not None:
            info["check"] = check_variant(first[0], first[1], first[2], ref, a.tol, extra)
        elif extra:
            info["check"] = {f"same_tokens_as_{k}": first[0] == v for k, v in extra.items()}
            info["check"]["ok"] = all(info["check"].values())
        result["variants"][variant] = info
        del dec
        gc.collect()

    v = result["variants"]
    if not v:
        ap.error("--variants: none given")
    best_prefill = min(v, key=lambda k: v[k]["prefill_ms"])
    best_decode = max(v, key=lambda k: v[k]["decode_tokens_per_s"])
    result.update(prefill_variant=best_prefill, prefill_ms=v[best_prefill]["prefill_ms"],
                  decode_variant=best_decode,
                  decode_tokens_per_s=v[best_decode]["decode_tokens_per_s"],
                  new_tokens=v[best_decode]["new_tokens"])
    ok = all(x.get("check", {}).get("ok", True) and not x.get("unstable_tokens")
             for x in v.values())
    if ref is not None or extra:
        result["check_ok"] = ok
    print(json.dumps(result), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
