#!/usr/bin/env python3
"""Sentence embeddings of a real checkpoint: `metatune model embed` against references, in one run.

  check.py --metatune BIN --hf DIR --texts FILE [--batch 1] [--rounds 2] [--repeats 3]
           [--db DB] [--implementations P[,P...]] [--csv FILE] [--command TEXT]
  check.py --hf DIR --texts FILE --print-buckets      # the buckets `model embed` will build
  (--artifact DIR --embed-runtime BIN: also the embedding artifact through embed_runtime)

- Tokens: Hugging Face's `tokenizers` on the folder's tokenizer.json, truncated at
  sentence_bert_config.json's max_seq_length; metatune's token count (its report) must equal
  theirs.
- Reference: a float64 numpy forward of the folder's BERT weights (bench/model/reference.py,
  no shared code with metatune) for each text at its exact length, mean-pooled and normalized
  as the folder's modules say (this script reads 1_Pooling/config.json and modules.json
  itself). metatune's embeddings must be within --tol of it (max |difference|, and cosine).
- Speed: metatune's embedding pass over all the texts (median of --repeats after a warm-up,
  as the command reports it) against ONNX Runtime's on the same batches -- the same buckets,
  padding and mask (bench/model/onnx_graphs.py's graphs of the same weights: the plain graph
  and the contrib-op one, the faster taken), alternating the two --rounds times. ONNX Runtime's
  embeddings are checked against the reference too.
Prints a table; appends rows to --csv; exits 1 when a check fails.
"""

import argparse
import csv
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "model"))
import hf_folder  # noqa: E402
import onnx_graphs  # noqa: E402
import reference  # noqa: E402
from ort_model import cores, session_options  # noqa: E402


def read_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def pipeline(folder):
    """(pooling modes, normalize, max_seq_length) from the folder's sentence-transformers files."""
    modules = read_json(os.path.join(folder, "modules.json"), [])
    types = [m["type"].rsplit(".", 1)[-1] for m in modules]
    pool_path = next((m.get("path", "") for m in modules if m["type"].endswith("Pooling")), None)
    pool = read_json(os.path.join(folder, pool_path, "config.json"), {}) if pool_path else {}
    modes = [m for m in ("cls_token", "max_tokens", "mean_tokens") if pool.get("pooling_mode_" + m)]
    if modes != ["mean_tokens"] and modules:
        sys.exit(f"check.py: pooling {modes}: this reference implements mean pooling only")
    st = read_json(os.path.join(folder, "sentence_bert_config.json"), {})
    return "Normalize" in types, int(st.get("max_seq_length", 512))


def buckets_of(lengths, max_len):
    """The powers of two from 16 each length needs, capped at max_len (as `model embed`)."""
    out = set()
    for n in lengths:
        b = 16
        while b < n:
            b *= 2
        out.add(min(b, max_len))
    return sorted(out)


def batches_of(lengths, buckets, batch):
    """Longest first, one bucket a batch of `batch` texts, what is left of a bucket one by one
    (as `model embed`)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out = []

    def split_short():
        if out and len(out[-1][1]) < batch:
            seq, texts = out.pop()
            out.extend((seq, [t]) for t in texts)

    for i in order:
        seq = next(b for b in buckets if b >= lengths[i])
        if not out or out[-1][0] != seq or len(out[-1][1]) == batch:
            if out and out[-1][0] != seq:
                split_short()
            out.append((seq, []))
        out[-1][1].append(i)
    split_short()
    return out


def pool(hidden, mask, normalize):
    v = (hidden * mask[..., None]).sum(axis=-2) / mask.sum(axis=-1, keepdims=True)
    if normalize:
        v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return v


class OrtEmbedder:
    """ONNX Runtime sessions, one per bucket and batch size the batches use, for one variant."""

    def __init__(self, folder, batches, variant, threads):
        self.sessions = {}
        for seq, texts in batches:
            if (seq, len(texts)) not in self.sessions:
                model = onnx_graphs.build(folder, len(texts), seq, variant)
                self.sessions[seq, len(texts)] = ort.InferenceSession(
                    model.SerializeToString(), session_options(threads),
                    providers=["CPUExecutionProvider"])

    def embed(self, ids, batches, normalize, dim):
        out = np.zeros((len(ids), dim), dtype=np.float32)
        for seq, texts in batches:
            x = np.zeros((len(texts), seq), dtype=np.int64)
            m = np.zeros((len(texts), seq), dtype=np.int64)
            for r, t in enumerate(texts):
                x[r, :len(ids[t])] = ids[t]
                m[r, :len(ids[t])] = 1
            h = self.sessions[seq, len(texts)].run(None, {"input_ids": x, "attention_mask": m})[0]
            e = pool(h.astype(np.float64), m.astype(np.float64), normalize)
            for r, t in enumerate(texts):
                out[t] = e[r]
        return out


def compare(got, ref):
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    cos = (got * ref).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(ref, axis=-1))
    return diff, float(cos.min())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metatune", default="")
    ap.add_argument("--print-buckets", action="store_true",
                    help="print the buckets the texts need (comma-separated) and stop")
    ap.add_argument("--hf", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--db", default="")
    ap.add_argument("--implementations", default="")
    ap.add_argument("--artifact", default="",
                    help="an embedding artifact of the same buckets (model compile --embedding), "
                         "timed through --embed-runtime on the same ids")
    ap.add_argument("--embed-runtime", default="")
    ap.add_argument("--tol", type=float, default=1e-4, help="max |metatune - reference|")
    ap.add_argument("--csv", default="")
    ap.add_argument("--command", default="")
    a = ap.parse_args()

    with open(a.texts) as f:
        texts = [line.rstrip("\r\n") for line in f if line.strip()]
    normalize, max_len = pipeline(a.hf)
    tok = Tokenizer.from_file(os.path.join(a.hf, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    ids = [e.ids for e in tok.encode_batch(texts)]
    lengths = [len(i) for i in ids]
    buckets = buckets_of(lengths, max_len)
    if a.print_buckets:
        print(",".join(str(b) for b in buckets))
        return 0
    if not a.metatune:
        ap.error("--metatune is required")
    batches = batches_of(lengths, buckets, a.batch)
    folder = hf_folder.load(a.hf)
    threads = cores()
    print(f"{len(texts)} texts, {sum(lengths)} tokens (longest {max(lengths)}, cut at {max_len}); "
          f"buckets {buckets}, batch {a.batch}; ONNX Runtime {ort.__version__}, {threads} threads",
          flush=True)

    t0 = time.perf_counter()
    ref_model = reference.Reference(folder)
    ref = np.stack([pool(ref_model.bert_row(np.array(i), np.ones(len(i)))[None],
                         np.ones((1, len(i))), normalize)[0] for i in ids])
    print(f"float64 reference: {time.perf_counter() - t0:.1f} s", flush=True)

    ort_variants = {}
    for variant in ("onnx", "fused"):
        ort_variants[variant] = OrtEmbedder(folder, batches, variant, threads)

    work = tempfile.mkdtemp(prefix="mt_sentence_embeddings.")
    ids_file = os.path.join(work, "ids.txt")
    with open(ids_file, "w") as f:
        f.writelines(",".join(str(t) for t in i) + "\n" for i in ids)
    # Each policy of --implementations (comma-separated; none: model embed's default) is a
    # metatune run of every round, keyed by the policy its report names.
    policies = a.implementations.split(",") if a.implementations else [""]
    mt_ms, ort_ms, art_ms, checks = {}, {v: [] for v in ort_variants}, [], {}
    ok = True
    for rnd in range(a.rounds):
        for k, policy in enumerate(policies):
            npy = os.path.join(work, f"e{rnd}_{k}.npy")
            report = os.path.join(work, f"r{rnd}_{k}.json")
            cmd = [a.metatune, "model", "embed", "--hf", a.hf, "--input", a.texts, "--batch",
                   str(a.batch), "--repeats", str(a.repeats), "--save-output", npy,
                   "--report-json", report, "-q", "--log-level", "warn"]
            if a.db:
                cmd += ["--db", a.db]
            if policy:
                cmd += ["--implementations", policy]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"check.py: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            rep = read_json(report)
            name = "metatune " + rep["implementations"]
            mt_ms.setdefault(name, []).append(rep["embed_ms"])
            if rep["tokens"] != sum(lengths) or rep["buckets"] != buckets:
                print(f"tokens: metatune {rep['tokens']} in buckets {rep['buckets']}, tokenizers "
                      f"{sum(lengths)} in {buckets}")
                ok = False
            checks[name] = compare(np.load(npy), ref)
        if a.artifact:
            art_npy = os.path.join(work, f"a{rnd}.npy")
            cmd = [a.embed_runtime, a.artifact, "-f", ids_file, "-r", str(a.repeats), "-o", art_npy]
            r = subprocess.run(cmd, capture_output=True, text=True)
            line = [x for x in r.stdout.splitlines() if x.startswith("embedded ")]
            if r.returncode != 0 or not line:
                sys.exit(f"check.py: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            art_ms.append(float(line[0].split(" in ")[1].split(" ms")[0]))
            checks["artifact"] = compare(np.load(art_npy), ref)
        for variant, emb in ort_variants.items():
            out = emb.embed(ids, batches, normalize, folder.dim)  # warm-up
            times = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                out = emb.embed(ids, batches, normalize, folder.dim)
                times.append(1e3 * (time.perf_counter() - t0))
            ort_ms[variant].append(statistics.median(times))
            checks["ort " + variant] = compare(out, ref)
        print(f"round {rnd + 1}: " + ", ".join(f"{n} {v[-1]:.1f} ms" for n, v in mt_ms.items()) +
              ", " +
              (f"artifact {art_ms[-1]:.1f} ms, " if art_ms else "") + "ONNX Runtime " +
              ", ".join(f"{v} {ort_ms[v][-1]:.1f} ms" for v in ort_ms), flush=True)

    for name, (diff, cos) in checks.items():
        good = diff <= a.tol
        ok &= good or name.startswith("ort")
        print(f"{name:>12}: max |e - reference| {diff:.2e}, min cosine {cos:.8f}"
              f" {'ok' if good else 'FAILED'}")
    best_ort = min(ort_ms, key=lambda v: statistics.median(ort_ms[v]))
    ref_ort = statistics.median(ort_ms[best_ort])
    mt = {n: statistics.median(v) for n, v in mt_ms.items()}
    print(f"\n| implementation | pass over {len(texts)} texts (ms) | texts/s |\n|---|---:|---:|")
    for n, ms in mt.items():
        print(f"| {n} | {ms:.1f} | {1e3 * len(texts) / ms:.1f} |")
    if art_ms:
        art = statistics.median(art_ms)
        print(f"| metatune artifact (embed_runtime) | {art:.1f} | {1e3 * len(texts) / art:.1f} |")
    print(f"| ONNX Runtime ({best_ort}) | {ref_ort:.1f} | {1e3 * len(texts) / ref_ort:.1f} |")
    for n, ms in mt.items():
        print(f"ONNX Runtime / {n} time: {ref_ort / ms:.2f} (above 1: metatune faster)")
    if a.csv:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["date", "checkpoint", "texts", "tokens", "batch", "implementation",
                            "pass_ms", "texts_per_s", "max_abs_diff", "min_cosine", "command"])
            date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
            name = os.path.basename(os.path.dirname(os.path.normpath(a.hf))) or a.hf
            rows = [(n, ms, n) for n, ms in mt.items()]
            if art_ms:
                rows.append(("metatune artifact", statistics.median(art_ms), "artifact"))
            rows.append((f"onnxruntime {best_ort}", ref_ort, "ort " + best_ort))
            for label, ms, key in rows:
                w.writerow([date, name, len(texts), sum(lengths), a.batch, label, f"{ms:.2f}",
                            f"{1e3 * len(texts) / ms:.1f}", f"{checks[key][0]:.2e}",
                            f"{checks[key][1]:.8f}", a.command])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
