#!/usr/bin/env bash
# The main job: sets up (Debian packages, as root), builds, then tunes matmul 1024^3 f32 on
# this CPU from scratch and prints how the best kernel found compares with oneDNN doing the
# same work, both measured in this run. Every measured candidate goes to demo.db (delete it to
# start over; run again with a larger TRIALS to tune further).
#
#   bash scripts/demo.sh                       # 300 trials, ~5-10 minutes on 2 cores
#   TRIALS=1000 WORKLOAD='dense(M=128,N=3072,K=768,bias=1,act=gelu)' bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/bin/metatune tune --workload "${WORKLOAD:-matmul(M=1024,N=1024,K=1024)}" \
  --trials "${TRIALS:-300}" --db "${DB:-demo.db}" --seed 1 "$@"
./build/bin/metatune best --db "${DB:-demo.db}"
