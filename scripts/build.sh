#!/usr/bin/env bash
# Configures and builds metatune into ./build (Ninja; optimised without debug info unless
# -DCMAKE_BUILD_TYPE=RelWithDebInfo is passed through).
set -euo pipefail
cd "$(dirname "$0")/.."
WERROR=OFF
if [ "${CI:-}" = "true" ]; then WERROR=ON; fi
cmake -S . -B build -G Ninja -DMETATUNE_WERROR=$WERROR "$@" >/dev/null
cmake --build build -j "$(nproc)"
