#!/usr/bin/env bash
# What the unroll axis of the search is worth (issue 12, section 3): tunes one workload twice
# from scratch with the same seed and trial budget, once with lowering's automatic unrolling
# (core/lower/auto_unroll.cpp) and once with it turned off (METATUNE_DISABLE_AUTO_UNROLL=1,
# as before that pass existed: the sampled unroll depth then changes nothing), each run with
# its own database, and prints for each the tuned kernel against oneDNN doing the same work,
# re-measured side by side at the end of its run (`metatune tune`'s comparison), then both
# best kernels and oneDNN timed again interleaved (ROUNDS=5 rounds, the fastest of each).
#
#   bash bench/auto_unroll/run.sh [TRIALS [WORKLOAD [SEED]]]
#        defaults: 200, 'dense(M=128,N=3072,K=768,bias=1,act=gelu)', 1
#
# Results go to bench/results/auto_unroll/ (OUT=... to change): per run the database, the JSON
# summary of `metatune tune --json` and its log; one JSON line per run is appended to
# summary.jsonl there. A 200-trial run of the BERT dense layer took 4-10 minutes on 2 shared
# cores (the unrolled candidates compile longer). On a shared machine a parallel kernel's time
# moves by 2x and more with the load, oneDNN's most: read the interleaved figures, and repeat.
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

# Seconds of one record, rebuilt and timed in a fresh process: db, record, DISABLE value.
time_of() {
  METATUNE_DISABLE_AUTO_UNROLL=$3 "$BIN" replay --db "$1" --record "$2" --repeats 3 --json \
    2>/dev/null | tail -n 1 | jq -r '.seconds'
}

echo "workload $WORKLOAD, $TRIALS trials, seed $SEED; figures are noisy on a shared machine" >&2
if [ -z "${SKIP_TUNE:-}" ]; then # SKIP_TUNE=1: only the interleaved timing of existing runs
  run unroll_on METATUNE_DISABLE_AUTO_UNROLL=0
  run unroll_off METATUNE_DISABLE_AUTO_UNROLL=1
fi

# The two runs ended minutes apart, under different machine load, and a parallel kernel (oneDNN's
# above all) slows down several times when another process takes a core. So the two best
# kernels and oneDNN are timed again here, interleaved, ROUNDS times; the fastest of each
# (the round with the least interference) is compared.
ROUNDS=${ROUNDS:-5}
on_best=$(tail -n 1 "$OUT/unroll_on.json" | jq -r '.tasks[0].best_record_id')
off_best=$(tail -n 1 "$OUT/unroll_off.json" | jq -r '.tasks[0].best_record_id')
lib=$(tail -n 1 "$OUT/unroll_on.json" | jq -r '.tasks[0].library_record_id')
flops=$(tail -n 1 "$OUT/unroll_on.json" | jq -r '.tasks[0].flops')
on_t=() off_t=() lib_t=()
for ((r = 0; r < ROUNDS; ++r)); do
  on_t+=("$(time_of "$OUT/unroll_on.db" "$on_best" 0)")
  off_t+=("$(time_of "$OUT/unroll_off.db" "$off_best" 1)")
  lib_t+=("$(time_of "$OUT/unroll_on.db" "$lib" 0)")
done
min_of() { printf '%s\n' "$@" | sort -g | head -n 1; }
jq -nc --arg w "$WORKLOAD" --argjson f "$flops" --argjson r "$ROUNDS" \
  --argjson on "$(min_of "${on_t[@]}")" --argjson off "$(min_of "${off_t[@]}")" \
  --argjson lib "$(min_of "${lib_t[@]}")" '{interleaved: $w, rounds: $r,
    onednn_gflops: ($f / $lib * 1e-9),
    unroll_on: {gflops: ($f / $on * 1e-9), tuned_over_onednn: ($lib / $on)},
    unroll_off: {gflops: ($f / $off * 1e-9), tuned_over_onednn: ($lib / $off)},
    on_over_off: ($off / $on)}' | tee -a "$OUT/summary.jsonl"
