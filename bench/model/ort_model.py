#!/usr/bin/env python3
"""ONNX Runtime's latency on a checkpoint folder's forward (the ONNX column of bench/model).

  ort_model.py --hf DIR [--seq 128] [--batch 1] [--tokens 1,2,3] [--repeats 10] [--warmup 3]
               [--variants onnx,optimizer,fused] [--threads N] [--check] [--tol T]
               [--save-output FILE.npy] [--show-ops]

Builds the graphs of onnx_graphs.py from the folder's weights and runs each variant with
onnxruntime on CPU (ORT_ENABLE_ALL, intra-op threads = the cores this process may use,
sequential execution, inputs and the output bound once so a run allocates nothing):

  onnx       the plain graph, fused by ONNX Runtime's own graph optimizer
  optimizer  the plain graph through onnxruntime.transformers' optimizer first (its Python
             fusions: Attention, SkipLayerNormalization, (Fast/Bias)Gelu), then as above
  fused      the contrib-op graph of onnx_graphs.py (Attention, SkipLayerNormalization,
             FastGelu/BiasGelu written directly)

Timing: --warmup runs, then the median of --repeats runs (wall clock; cpu_ms is the process's
CPU time per run, all threads). The reported latency is the fastest
variant's (ONNX Runtime at its best); every variant's is listed. --check compares every
variant's output with reference.py's float64 forward. Prints one JSON line.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

import hf_folder
import onnx_graphs
import reference


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def session_options(threads, ops_dir=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if ops_dir:  # the graph as ONNX Runtime runs it, weights kept out of the file
        so.optimized_model_filepath = os.path.join(ops_dir, "optimized.onnx")
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                    "optimized.weights")
        so.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    return so


def op_counts(model):
    counts = {}
    for n in model.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def transformers_optimize(model, folder):
    """The plain graph through onnxruntime.transformers' Python fusions; None if unavailable."""
    try:
        from onnxruntime.transformers import optimizer
    except ImportError:
        return None, "onnxruntime.transformers is not in this wheel"
    kind = "gpt2" if folder.model_type == "gpt2" else "bert"
    opt = optimizer.optimize_model(model, model_type=kind, num_heads=folder.heads,
                                   hidden_size=folder.dim, opt_level=0)
    return opt.model, opt.get_fused_operator_statistics()


class Timed:
    """One variant's session, its bound input and output, and its timings."""

    def __init__(self, model_bytes, feeds, out_shape, threads, ops_dir=None):
        t0 = time.perf_counter()
        self.sess = ort.InferenceSession(model_bytes, session_options(threads, ops_dir),
                                         providers=["CPUExecutionProvider"])
        self.session_s = time.perf_counter() - t0
        self.out = np.empty(out_shape, dtype=np.float32)
        self.io = self.sess.io_binding()
        self.feeds = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
        for name, arr in self.feeds.items():
            self.io.bind_cpu_input(name, arr)
        self.io.bind_output(self.sess.get_outputs()[0].name, "cpu", 0, np.float32,
                            list(out_shape), self.out.ctypes.data)

    def run(self):
        self.sess.run_with_iobinding(self.io)
        return self.out

    def time(self, warmup, repeats):
        for _ in range(warmup):
            self.run()
        times, cpu = [], []
        for _ in range(max(1, repeats)):
            t0, c0 = time.perf_counter(), time.process_time()
            self.run()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return 1e3 * statistics.median(times), times, 1e3 * statistics.median(cpu)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hf", required=True, help="a folder made by make_checkpoint.py")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--tokens", default="", help="comma-separated ids (default: metatune's)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the cores)")
    ap.add_argument("--variants", default="onnx,optimizer,fused")
    ap.add_argument("--check", action="store_true", help="compare with reference.py's forward")
    ap.add_argument("--tol", type=float, default=reference.DEFAULT_TOL)
    ap.add_argument("--save-output", default="", help="the fastest variant's output (.npy)")
    ap.add_argument("--show-ops", default="", metavar="DIR",
                    help="write the graphs as ONNX Runtime optimised them under DIR, count ops")
    a = ap.parse_args(argv)

    folder = hf_folder.load(a.hf)
    tokens = hf_folder.parse_tokens(a.tokens)
    seq = len(tokens) if tokens else a.seq
    ids = hf_folder.input_ids(folder, seq, a.batch, tokens)
    feeds = onnx_graphs.feeds(folder, ids)
    out_shape = (a.batch, seq, folder.vocab if folder.model_type == "gpt2" else folder.dim)
    threads = a.threads or cores()
    ref = reference.Reference(folder).forward(ids) if a.check else None

    result = {"model": folder.name, "hf": a.hf, "batch": a.batch, "seq": seq,
              "ort_version": ort.__version__, "threads": threads, "warmup": a.warmup,
              "runs": a.repeats, "variants": {}}
    plain = None
    best = None
    for variant in [v for v in a.variants.split(",") if v]:
        info = {}
        if variant in ("onnx", "optimizer"):
            if plain is None:
                plain = onnx_graphs.build(folder, a.batch, seq, "onnx")
            model = plain
            if variant == "optimizer":
                model, fused = transformers_optimize(plain, folder)
                if model is None:
                    info["skipped"] = fused
                    result["variants"][variant] = info
                    continue
                info["transformers_fusions"] = {k: v for k, v in fused.items() if v}
        elif variant == "fused":
            model = onnx_graphs.build(folder, a.batch, seq, "fused")
        else:
            ap.error(f"--variants: unknown '{variant}' (onnx, optimizer, fused)")
        ops_dir = os.path.join(a.show_ops, f"{folder.name}.{variant}") if a.show_ops else None
        if ops_dir:
            os.makedirs(ops_dir, exist_ok=True)
        info["graph_ops"] = len(model.graph.node)
        timed = Timed(model.SerializeToString(), feeds, out_shape, threads, ops_dir)
        info["session_s"] = round(timed.session_s, 2)
        if ops_dir:
            import onnx
            info["ort_ops"] = op_counts(onnx.load(os.path.join(ops_dir, "optimized.onnx"),
                                                  load_external_data=False))
        ms, times, cpu_ms = timed.time(a.warmup, a.repeats)
        # CPU time (all threads) per run: with one thread, a figure that a busy machine
        # inflates far less than the wall-clock one.
        info.update(latency_ms=round(ms, 3), min_ms=round(1e3 * min(times), 3),
                    max_ms=round(1e3 * max(times), 3), cpu_ms=round(cpu_ms, 3))
        if ref is not None:
            c = reference.compare(variant, timed.out, ref, a.tol,
                                  logits=folder.model_type == "gpt2")
            info["check"] = {k: c[k] for k in ("ok", "max_abs_err", "rel_err", "argmax_agree",
                                               "error") if k in c}
        result["variants"][variant] = info
        if best is None or ms < result["variants"][best]["latency_ms"]:
            best = variant
            if a.save_output:
                np.save(a.save_output, timed.out)
        del timed
    if best is None:
        print(json.dumps(result))
        return 1
    result.update(variant=best, latency_ms=result["variants"][best]["latency_ms"])
    if ref is not None:
        result["tol_rel_to_max_abs_ref"] = a.tol
        result["check_ok"] = all(v.get("check", {}).get("ok", False)
                                 for v in result["variants"].values() if "latency_ms" in v)
    print(json.dumps(result), flush=True)
    return 0 if result.get("check_ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
