#!/usr/bin/env bash
# bench/model's Python environment (bench/model/.venv, or $MT_BENCH_VENV) with the pinned
# packages of requirements.txt; see bench/venv.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../venv.sh" "$here"
