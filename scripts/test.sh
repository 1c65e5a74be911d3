#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
# setup.sh installs PoCL: the OpenCL tests fail rather than skip if it has no device, so a
# missing install step cannot hide behind skipped tests.
export METATUNE_REQUIRE_OPENCL=1
ctest --output-on-failure -j "$(nproc)" --timeout 600
