#!/usr/bin/env bash
# bench/gpu: metatune's kernels for one NVIDIA GPU against cuBLAS, measured in the same run.
#   bash bench/gpu/run.sh                       # under 10 minutes on an H200 (estimated)
#   TRIALS=16 OUT=/tmp/gpu bash bench/gpu/run.sh
#   BUILD=build-x DB=gpu.db bash bench/gpu/run.sh
# Each operator is tuned by `metatune tune --target cuda --library cublas`: the cublas target
# is measured once per workload through the same measurer as the tuned candidates (own worker,
# CUDA events, L2 flushed before each repeat, output checked against the reference), and at
# the end the best tuned kernel and cuBLAS are timed again side by side (alternating rounds in
# fresh workers). The table gives those figures: tuned TFLOPS, cuBLAS TFLOPS, their ratio and
# whether both passed the reference check. Without a CUDA device it stops at once (exit 2).
# Environment: TRIALS (records per operator at most, default 256: the time budget ends the
# run first on an H200, about one record a second at 4096^3), OP_SECONDS (time budget per operator,
# default 160: `tune --time-budget`, references and the cuBLAS measurement included; the search
# stops then, measures its best again and compares it with cuBLAS, about 30 s more; a hard cap
# of OP_SECONDS + 120 s interrupts a tuner that overruns, which still reports what it has),
# DEADLINE (a `date +%s` time by which the last operator is to be done: the time left is shared
# among the operators still to run, in proportion to SHARES, at most OP_SECONDS each), SHARES
# (each operator's share of that time, default "2,1,1": the f16 matmul, the CUDA issue's goal,
# gets half), OUT (results folder, default
# bench/results/gpu), DB (default $OUT/gpu.db), BUILD (default build), ONLY (operator numbers:
# ONLY=1 runs the f16 matmul alone).
# Every candidate is measured in a worker process of its own (CUDA context, 64-128 MB of
# operands, the output check): about 1 s at 4096^3; the re-measurement of the best records and
# the side-by-side comparison are shortened to match. MIN_REPEAT_MS (default 30; tune's own
# default is 100) is how long each of the 3 timed repeats calls the kernel back to back between
# two events: 70 calls of a 0.43 ms f16 kernel, 10 of a 3 ms f32 one, where the events resolve
# about a microsecond, and 0.2 s a candidate saved for more trials (gpu.md's time split shows
# how much of the run the timed runs take).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
out="${OUT:-$root/bench/results/gpu}"
db="${DB:-$out/gpu.db}"
trials="${TRIALS:-256}"
op_seconds="${OP_SECONDS:-160}"
min_repeat_ms="${MIN_REPEAT_MS:-30}"
mt="$build/bin/metatune"

command -v python3 >/dev/null || { echo "bench/gpu: python3 is needed for the table" >&2; exit 2; }
if [[ ! -x "$mt" || ! -e "$build/lib/metatune/plugins/cublas.so" ]]; then
  cmake --build "$build" --target metatune_cli cuda cublas llvm_cpu std_rules cost_models \
    search_strategies
fi

# The device, or why there is none: what `metatune plugins` says of the cuda and cublas targets.
devices="$("$mt" plugins --json 2>/dev/null)"
status="$(python3 -c '
import json, sys
found = {}
for p in json.loads(sys.argv[1])["plugins"]:
    for c in p.get("components", []):
        if c.get("kind") == "target" and c["name"] in ("cuda", "cublas"):
            found[c["name"]] = c.get("device", {})
cuda, cublas = found.get("cuda"), found.get("cublas")
if cuda is None:
    print("no CUDA device: the cuda target is not built"); sys.exit(1)
if "unavailable" in cuda:
    why = cuda["unavailable"]
    print(why if why.startswith("no CUDA device") else "no CUDA device: " + why); sys.exit(1)
if cublas is None:
    print("the cublas target is not built"); sys.exit(1)
if "unavailable" in cublas:
    print(cublas["unavailable"]); sys.exit(1)
print(cuda.get("device", "?") + " (" + cuda.get("target", "cuda") + ")")
' "$devices")" || { echo "bench/gpu: $status" >&2; exit 2; }

# label | workload | extra tune flags. A K = 4096 sum in f32 is off by a few 1e-5 in any
# order (rounding of partial sums of size ~20), so those two are checked with atol 1e-3 (a
# wrong kernel is off by O(1)). The BERT dense layer's GEMM: cuBLAS's GELU epilogue is the tanh
# form and the workload's is erf, so the bias + GELU layer is not offered by cublas.
ops=(
  "GMM 4096 f16->f32|matmul(M=4096,N=4096,K=4096,dtype=f16,out_dtype=f32)|--atol 1e-3"
  "GMM 4096 f32|matmul(M=4096,N=4096,K=4096)|--atol 1e-3"
  "dense bert (GEMM)|dense(M=128,N=3072,K=768,bias=0,act=none)|"
)

# TMA=1: the f16 operator's wgmma spaces include the one whose tiles are TMA box copies
# (docs/gpu.md, "TMA copies"; off by default until measured on a device). on_device.sh sets it
# when the on-device TMA test has passed.
# PRODUCER=1 (with TMA=1): and the one whose copies a producer warpgroup issues (warp
# specialisation; on_device.sh sets it when that on-device test has passed too).
if [[ -n "${TMA:-}" && -n "${PRODUCER:-}" ]]; then
  ops[0]+=' --rules +std.MultiLevelTilingTensorCore{"wgmma_tma":"both","wgmma_producer":"both"}'
elif [[ -n "${TMA:-}" ]]; then
  ops[0]+=' --rules +std.MultiLevelTilingTensorCore{"wgmma_tma":"both"}'
fi

IFS=',' read -r -a shares <<<"${SHARES:-2,1,1}"
if ((${#shares[@]} != ${#ops[@]})); then
  echo "bench/gpu: SHARES needs ${#ops[@]} numbers, one per operator (got '${SHARES:-}')" >&2
  exit 2
fi

# ONLY: the operators to run, by number (1 f16, 2 f32, 3 BERT), e.g. ONLY=1 or ONLY=1,3.
if [[ -n "${ONLY:-}" ]]; then
  picked=()
  picked_shares=()
  for i in ${ONLY//,/ }; do
    picked+=("${ops[$((i - 1))]}")
    picked_shares+=("${shares[$((i - 1))]}")
  done
  ops=("${picked[@]}")
  shares=("${picked_shares[@]}")
fi

mkdir -p "$out"
echo "bench/gpu on $status: ${#ops[@]} operators, $trials trials each (time budget at most ${op_seconds} s)," \
  "database $db" >&2
start=$(date +%s)
n=0
for op in "${ops[@]}"; do
  IFS='|' read -r label spec extra <<<"$op"
  n=$((n + 1))
  budget=$op_seconds
  if [[ -n "${DEADLINE:-}" ]]; then
    # What is left until the deadline, less the wind-up (verification, comparison: ~30 s) of
    # each operator still to run, shared among them by their shares.
    shares_left=0
    for ((i = n - 1; i < ${#ops[@]}; ++i)); do shares_left=$((shares_left + shares[i])); done
    left=$(((DEADLINE - $(date +%s) - 30 * (${#ops[@]} - n + 1)) * shares[n - 1] / shares_left))
    if ((left < budget)); then budget=$left; fi
    if ((budget < 20)); then budget=20; fi
  fi
  echo "[$n/${#ops[@]}] $label: $spec (time budget ${budget} s)" >&2
  # shellcheck disable=SC2086 # $extra is a list of flags
  timeout -s INT -k 30 $((budget + 120)) "$mt" tune --target cuda -w "$spec" --trials "$trials" \
    --time-budget "$budget" --db "$db" --library cublas --verify-top 2 --verify-rounds 2 \
    --compare-repeats 3 --min-repeat-ms "$min_repeat_ms" --json -q $extra \
    >"$out/op$n.json" 2>"$out/op$n.log" ||
    echo "  (tune exited with status $?; see $out/op$n.log)" >&2
done
elapsed=$(($(date +%s) - start))

DB="$db" MIN_REPEAT_MS="$min_repeat_ms" python3 - "$out" "$status" "$trials" "$elapsed" "${ops[@]}" <<'EOF'
import csv, datetime, json, os, re, sqlite3, sys

out, device, trials, elapsed, ops = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]


def last_json(path):
    try:
        lines = [l for l in open(path) if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def tflops(g):
    return g / 1e3 if isinstance(g, (int, float)) and g > 0 else None


rows = []
for n, op in enumerate(ops, 1):
    label, spec, _ = op.split("|")
    j = last_json(os.path.join(out, f"op{n}.json"))
    log = open(os.path.join(out, f"op{n}.log"), errors="replace").read()
    row = {"operator": label, "workload": spec, "tuned": None, "cublas": None, "ratio": None,
           "side_by_side": False, "check": "", "trials": 0, "failed": 0}
    t = j["tasks"][0] if j and j.get("tasks") else None
    if t:
        row["trials"], row["failed"] = t.get("prior_records", 0) + t.get("trials", 0), t.get("failed", 0)
        c = t.get("compare")
        if c:
            row["tuned"], row["cublas"] = tflops(c["metatune_gflops"]), tflops(c["library_gflops"])
            row["side_by_side"] = True
        else:
            row["tuned"] = tflops(t.get("tuned_gflops") or t.get("best_gflops"))
            if t.get("library_target", "").startswith("cublas"):
                row["cublas"] = tflops(t.get("library_gflops"))
    if row["tuned"] and row["cublas"]:
        row["ratio"] = row["tuned"] / row["cublas"]
    # Every time in a record passed the output check against the reference; what failed says
    # why in the log.
    checks = []
    checks.append("tuned ok" if row["tuned"] else "tuned: no kernel passed the check" if t else
                  "tuned: no result")
    failed = re.search(r"the cublas implementation failed \(record \d+\): (\S+)", log)
    if row["cublas"]:
        checks.append("cuBLAS ok")
    elif failed:
        checks.append("cuBLAS " + failed.group(1).rstrip(":"))
    elif "not offered by cublas" in log or (t and not t.get("library_measured")):
        checks.append("cuBLAS not offered")
    else:
        checks.append("cuBLAS: no result")
    row["check"] = ", ".join(checks)
    if not j:
        m = re.findall(r"(?:error|Error)[^\n]*", log)
        row["check"] += " (" + (m[-1] if m else "see op%d.log" % n) + ")"
    rows.append(row)

fmt = lambda v, f="%.1f": f % v if v is not None else "-"
date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
md = [f"bench/gpu, {date}, {device}, {trials} trials per operator, {elapsed} s. "
      "Tuned and cuBLAS timed side by side at the end of each run (alternating rounds in "
      "fresh workers; marked *), else the records' own times; each timed repeat calls the "
      f"kernel back to back for at least {os.environ.get('MIN_REPEAT_MS', '?')} ms.", "",
      "| operator | workload | tuned TFLOPS | cuBLAS TFLOPS | tuned/cuBLAS | checked against the reference | records (failed) |",
      "|---|---|---:|---:|---:|---|---:|"]
for r in rows:
    md.append(f"| {r['operator']} | `{r['workload']}` | {fmt(r['tuned'])} | {fmt(r['cublas'])} | "
              f"{fmt(r['ratio'], '%.2f')}{'*' if r['side_by_side'] else ''} | {r['check']} | "
              f"{r['trials']} ({r['failed']}) |")

# Where each operator's tuning went: its time (tune's time_seconds) and, per kind of kernel,
# how many records this database holds and the fastest of them. The kind is read from the
# record's trace: the tensor instruction and the wgmma layout its design space asked for.
def kind_of(trace):
    for key, kind in (("wgmma_producer", "wgmma, TMA, producer warpgroup"), ("wgmma_tma", "wgmma, TMA"),
                      ("wgmma_swizzle", "wgmma, swizzled"), ("wgmma.mma", "wgmma"), ('"wmma.', "WMMA")):
        if key in trace:
            return kind
    return "CUDA cores"


def kinds(workload_id, flops):
    try:
        db = sqlite3.connect(f"file:{os.environ['DB']}?mode=ro", uri=True)
        rows = db.execute("SELECT trace, mean_secs FROM records WHERE workload_id = ? AND "
                          "target LIKE 'cuda%'", (workload_id,)).fetchall()
    except (KeyError, sqlite3.Error) as e:
        return f"(database not readable: {e})"
    by = {}
    for trace, secs in rows:
        k = by.setdefault(kind_of(trace), [0, 0, None])
        k[0] += 1
        if secs is None:
            k[1] += 1
        elif k[2] is None or secs < k[2]:
            k[2] = secs
    return "; ".join(f"{kind} {n} ({failed} failed), best " +
                     (f"{flops / best * 1e-12:.1f} TFLOPS" if best else "-")
                     for kind, (n, failed, best) in sorted(by.items(), key=lambda kv: -kv[1][0]))


md += ["", "Where the tuning went (seconds: setup, search, measuring = builds summed over parallel "
       "workers + runs one at a time, model updates, final checks), and the records of each kind "
       "of kernel with the fastest:", ""]
for n, (op, r) in enumerate(zip(ops, rows), 1):
    j = last_json(os.path.join(out, f"op{n}.json"))
    t = j["tasks"][0] if j and j.get("tasks") else None
    if not t:
        continue
    tm = t.get("time_seconds", {})
    f = lambda k: "%.0f" % tm.get(k, 0)
    md.append(f"- {r['operator']}: setup {f('setup')}, search {f('search')}, measuring "
              f"{f('measuring')} (builds {f('builds_summed')}, runs {f('runs_summed')}), updates "
              f"{f('updates')}, checks {f('checks')}; {t.get('trials', 0)} trials. "
              f"{kinds(t.get('workload_id'), t.get('flops') or 0)}")
text = "\n".join(md) + "\n"
print(text)
open(os.path.join(out, "gpu.md"), "w").write(text)
with open(os.path.join(out, "gpu.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["operator", "workload", "tuned_tflops", "cublas_tflops", "ratio", "side_by_side",
                "check", "records", "failed"])
    for r in rows:
        w.writerow([r["operator"], r["workload"], r["tuned"] or "", r["cublas"] or "",
                    r["ratio"] or "", int(r["side_by_side"]), r["check"], r["trials"], r["failed"]])
print(f"wrote {out}/gpu.md, gpu.csv, op*.json, op*.log", file=sys.stderr)
EOF
