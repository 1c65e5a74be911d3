#!/usr/bin/env bash
# Runs the operator suite with sensible defaults into bench/results/:
#   bash bench/operator_suite/run.sh                 # measure (tuned column from the db, if any)
#   TUNE=64 bash bench/operator_suite/run.sh         # tune every operator to 64 records first
#   BUILD=build DB=tune.db bash bench/operator_suite/run.sh --only GMM,SFM
# Tuned and oneDNN are timed side by side (alternating rounds, each in a fresh worker;
# --side-by-side ROUNDS, default 5); each operator is tuned in a run of its own, and the CSV
# says how many trials and minutes it took to reach 0.8 and 0.9 of oneDNN.
# The tuning database defaults to bench/results/operator_suite.db (fill it with `metatune
# tune` or TUNE=N); extra arguments go to bench_operator_suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
out="${OUT:-$root/bench/results}"
db="${DB:-$out/operator_suite.db}"
if [[ ! -x "$build/bench/operator_suite/bench_operator_suite" ]]; then
  cmake --build "$build" --target bench_operator_suite llvm_cpu onednn_cpu std_rules
fi
args=(--out "$out" --db "$db" --repeats "${REPEATS:-3}" --min-repeat "${MIN_REPEAT:-0.2}")
if [[ -n "${TUNE:-}" ]]; then args+=(--tune "$TUNE"); fi
mkdir -p "$out"
exec "$build/bench/operator_suite/bench_operator_suite" "${args[@]}" "$@"
