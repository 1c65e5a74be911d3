#!/usr/bin/env bash
# Samples per second of the search's candidate generation (bench_sampling, see sampling.cpp),
# on matmul 1024^3 and the BERT dense layer, and the ratio to another build's figures measured
# back to back (so that both see one machine load).
#
#   bash bench/sampling/run.sh --save DIR      copy this build's bench_sampling, its libraries
#                                              and plugins to DIR (e.g. before an optimisation)
#   bash bench/sampling/run.sh [DIR [ROUNDS]]  run this build's binary; with DIR, run DIR's and
#                                              this one alternately ROUNDS times (default 2) and
#                                              print the ratios of the medians
#
# Extra arguments for both binaries go in BENCH_ARGS (e.g. BENCH_ARGS="--repeats 1"), for this
# build's only in THIS_ARGS (e.g. THIS_ARGS="--threads 1"; an older build may not know them).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BIN=$BUILD/bench/sampling/bench_sampling
read -r -a ARGS <<<"${BENCH_ARGS:-}"
read -r -a MORE <<<"${THIS_ARGS:-}"

if [ "${1:-}" = "--save" ]; then
  DIR=${2:?--save needs a directory}
  mkdir -p "$DIR/lib" "$DIR/plugins"
  cp "$BIN" "$DIR/"
  cp -P "$BUILD"/lib/libmetatune_*.so* "$BUILD"/core/libmetatune.so* "$DIR/lib/"
  cp "$BUILD"/lib/metatune/plugins/*.so "$DIR/plugins/"
  git rev-parse HEAD >"$DIR/commit"
  echo "saved $(cat "$DIR/commit") to $DIR"
  exit 0
fi

run_this() { "$BIN" --label this "${ARGS[@]}" "${MORE[@]}"; }
run_other() { # DIR: its libraries first on the path (LD_LIBRARY_PATH wins over RUNPATH)
  LD_LIBRARY_PATH="$1/lib" "$1/bench_sampling" --plugin-dir "$1/plugins" \
    --label "other $(cat "$1/commit" 2>/dev/null | cut -c1-10)" "${ARGS[@]}"
}

if [ -z "${1:-}" ]; then
  run_this
  exit 0
fi
OTHER=$1
ROUNDS=${2:-2}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  run_other "$OTHER" | tee -a "$OUT"
  run_this | tee -a "$OUT"
done
# Ratio of this build to the other, each figure the median over the rounds: samples per second
# (wall), the wall time of the call (next_batch(64): the time a search waits for a batch), and
# CPU time per sample (all threads; the work itself, less sensitive to other load).
python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
keys = sorted({(r["workload"], r["path"]) for r in rows})
for w, p in keys:
    this = [r for r in rows if (r["workload"], r["path"]) == (w, p) and r["label"] == "this"]
    other = [r for r in rows if (r["workload"], r["path"]) == (w, p) and r["label"] != "this"]
    if not this or not other:
        continue
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    print(json.dumps({
        "workload": w, "path": p,
        "samples_per_second": {"other": med(other, "samples_per_second"),
                               "this": med(this, "samples_per_second")},
        "speedup_wall": round(med(this, "samples_per_second") / med(other, "samples_per_second"), 2),
        "seconds": {"other": med(other, "seconds"), "this": med(this, "seconds")},
        "speedup_seconds": round(med(other, "seconds") / med(this, "seconds"), 2),
        "speedup_cpu_per_sample": round(med(other, "cpu_ms_per_sample") / med(this, "cpu_ms_per_sample"), 2),
    }))
EOF
