#!/usr/bin/env bash
# What the unroll axis of the search is worth (issue 12, section 3): tunes one workload twice
# from scratch with the same seed and trial budget, once with lowering's automatic unrolling
# (core/lower/auto_unroll.cpp) and once with it turned off (METATUNE_DISABLE_AUTO_UNROLL=1,
# as before that pass existed: the sampled unroll depth then changes nothing), each run with
# its own database, and prints for each the tuned kernel against oneDNN doing the same work,
# re-measured side by side at the end of its run (`metatune tune`'s comparison).
#
#   bash bench/auto_unroll/run.sh [TRIALS [WORKLOAD [SEED]]]
#        defaults: 200, 'dense(M=128,N=3072,K=768,bias=1,act=gelu)', 1
#
# Results go to bench/results/auto_unroll/ (OUT=... to change): per run the database, the JSON
# summary of `metatune tune --json` and its log; one JSON line per run is appended to
# summary.jsonl there. A 200-trial run of the BERT dense layer takes ~3-5 minutes on 2 cores.
# On a shared machine single figures move by 10-20 %: compare ratios, not GFLOPS, and repeat.
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIALS=${1:-200}
WORKLOAD=${2:-'dense(M=128,N=3072,K=768,bias=1,act=gelu)'}
SEED=${3:-1}
BIN=${METATUNE:-build/bin/metatune}
OUT=${OUT:-bench/results/auto_unroll}
mkdir -p "$OUT"

run() { # name, then environment assignments for the run
  local name=$1
  shift
  rm -f "$OUT/$name.db" "$OUT/$name.db-wal" "$OUT/$name.db-shm"
  local start=$SECONDS
  env "$@" "$BIN" tune --workload "$WORKLOAD" --target llvm --trials "$TRIALS" --seed "$SEED" \
    --db "$OUT/$name.db" --json --quiet >"$OUT/$name.json" 2>"$OUT/$name.log"
  local minutes
  minutes=$(awk "BEGIN { printf \"%.1f\", ($SECONDS - $start) / 60 }")
  # The best record's unroll depths (0: none): the annotations of its scheduled program.
  local record depth
  record=$(tail -n 1 "$OUT/$name.json" | jq -r '.tasks[0].best_record_id')
  depth=$(env "$@" "$BIN" replay --db "$OUT/$name.db" --record "$record" --print-ir \
    --repeats 1 2>/dev/null | grep -o 'pragma_auto_unroll_max_step": [0-9]*' | grep -o '[0-9]*$' |
    sort -un | tr '\n' ' ' || true)
  depth=${depth:-0}
  tail -n 1 "$OUT/$name.json" | jq -c --arg name "$name" --arg min "$minutes" \
    --arg depth "${depth% }" '.tasks[0] | {run: $name, workload, trials,
      tuned_gflops: .compare.metatune_gflops, onednn_gflops: .compare.library_gflops,
      tuned_over_onednn: .compare.ratio, best_record_id, best_record_unroll: $depth,
      minutes: ($min | tonumber)}' | tee -a "$OUT/summary.jsonl"
}

echo "workload $WORKLOAD, $TRIALS trials, seed $SEED; figures are noisy on a shared machine" >&2
run unroll_on METATUNE_DISABLE_AUTO_UNROLL=0
run unroll_off METATUNE_DISABLE_AUTO_UNROLL=1
