#!/usr/bin/env bash
# bench/llama's checkpoint folder -- a Llama-style decoder with random weights in Hugging Face
# naming (make_checkpoint.py) -- made on first use (seconds; 500 MB for the small preset) and
# reused while PRESET and SEED match; prints its path. Shared by bench/llama, bench/chat and
# bench/aot_generation.
#
#   dir=$(bash bench/llama/checkpoint.sh)
#
# Variables: PRESET (small), SEED (0), CKPT (build/bench_llama), MT_BENCH_VENV
# (bench/model/.venv: `bash bench/model/setup.sh` makes it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${MT_BENCH_VENV:-$root/bench/model/.venv}"
dir="${CKPT:-${BUILD:-$root/build}/bench_llama}/llama-${PRESET:-small}-seed${SEED:-0}"
if [[ ! -f "$dir/config.json" ]]; then
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "bench/llama: no Python environment at $venv (bash bench/model/setup.sh)" >&2
    exit 2
  fi
  "$venv/bin/python" "$here/make_checkpoint.py" "$dir" --preset "${PRESET:-small}" \
    --seed "${SEED:-0}" >&2
fi
echo "$dir"
