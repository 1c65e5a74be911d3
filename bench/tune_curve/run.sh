#!/usr/bin/env bash
# The tuner's headline figures (issue 5): matmul 1024^3, the BERT-base dense layer (bias +
# GELU) and a ResNet-50 3x3 conv, each tuned from scratch against oneDNN doing the same fused
# work, plus XGBoost against the random cost model on the matmul. Results (CSV, SVG, one JSON
# summary line per run) go to bench/results/. Long: about 15-30 minutes per run on 2 cores.
#
#   bash bench/tune_curve/run.sh [TRIALS [TRIALS_OTHERS]]   (defaults 1000, 500)
#
# TRIALS for the two matmul runs, TRIALS_OTHERS for BERT dense and the ResNet conv. Each trial
# is timed twice for 50 ms (the picks are re-measured afterwards; see tune_curve.cpp).
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIALS=${1:-1000}
TRIALS_OTHERS=${2:-500}
BIN=build/bench/tune_curve/bench_tune_curve
OUT=bench/results
mkdir -p "$OUT"
run() { # name workload cost-model [extra...]
  local name=$1 workload=$2 cm=$3
  shift 3
  "$BIN" --workload "$workload" --cost-model "$cm" --repeats 2 --min-repeat-ms 50 \
    --out "$OUT/$name" "$@" |
    grep --line-buffered '^{' | tee -a "$OUT/summary.jsonl" # the JSON lines, not the log
}
run matmul 'matmul(M=1024,N=1024,K=1024)' cost.XGBoost --trials "$TRIALS"
run matmul_random 'matmul(M=1024,N=1024,K=1024)' cost.Random --trials "$TRIALS"
run bert_dense 'dense(M=128,N=3072,K=768,bias=1,act=gelu)' cost.XGBoost --trials "$TRIALS_OTHERS"
run resnet_conv3x3 'conv2d(N=1,C=64,H=56,W=56,F=64,KH=3,KW=3,stride=1,padding=1)' cost.XGBoost \
  --trials "$TRIALS_OTHERS"
