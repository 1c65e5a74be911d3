#!/usr/bin/env bash
# bench/gpu/on_device.sh: the whole GPU check as one command, for a machine with an NVIDIA GPU
# that cannot build metatune (no LLVM, xgboost, ... there). It unpacks the archive
# bench/gpu/bundle.sh made (.devbundle/metatune-gpu.tar.xz) at the build's own path, then:
#   1. the machine: GPU, driver, C library; metatune's view of the cuda and cublas targets;
#   2. the on-device tests (label cuda): random schedules of every workload, f16/bf16 and
#      tensor-core schedules run on the GPU against the interpreter, cuBLAS on the device, and
#      the wgmma probe (tests/gpu/wgmma_probe_test.cpp: which shared-memory layouts Hopper's
#      warpgroup MMA reads as the generator is to write them);
#   3. bench/gpu/run.sh: tuned vs cuBLAS TFLOPS, same run.
# Results go to $OUT (default bench/results/gpu-device): summary.md, tests.log and bench.tar.gz
# (the bench's table, logs, JSON and tuning database) -- few files, as a device tool returns.
# Environment: TOTAL_SECONDS (the whole run's budget, default 540: a device call is cut at 600 s
# and what was not written by then is lost), TESTS_SECONDS (cap on step 2, default 120),
# SKIP_TESTS=1, SKIP_BENCH=1, and bench/gpu/run.sh's TRIALS and OP_SECONDS (each operator's time
# budget, at most 160 s; by default what is left of the whole budget after the tests, less a
# minute for the tables and the archive, is shared among the operators as they run).
set -uo pipefail
began=$(date +%s)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/bench/results/gpu-device}"
archive="${ARCHIVE:-$root/.devbundle/metatune-gpu.tar.xz}"
mkdir -p "$out"
summary="$out/summary.md"
say() { echo "$*" | tee -a "$summary"; }
: >"$summary"

[[ -f "$archive" ]] || { say "on_device: no $archive (run bench/gpu/bundle.sh first)"; exit 2; }
unpacked="$(mktemp -d)"
# xz itself may be missing there; python3's lzma is the fallback.
unxz_to_stdout() {
  if command -v xz >/dev/null; then xz -dc "$1"; else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  fi
}
unxz_to_stdout "$archive" | tar -C "$unpacked" -xf - || { say "on_device: cannot unpack $archive"; exit 2; }
build="$(cat "$unpacked/BUILD_PATH")"
# The binaries' RPATHs and the tests' plugin paths name the build's own path: put it there.
if [[ -e "$build" && ! -e "$build/.metatune-bundle" ]]; then
  say "on_device: $build exists and is not an unpacked bundle; not replacing it"
  exit 2
fi
rm -rf "$build" && mkdir -p "$(dirname "$build")" && mv "$unpacked$build" "$build" &&
  touch "$build/.metatune-bundle"
say "# bench/gpu on device, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(cut -c1-7 "$unpacked/COMMIT")"
rm -rf "$unpacked"

mt="$build/bin/metatune"
export LD_LIBRARY_PATH="$build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "- C library: $(ldd --version 2>&1 | head -1); CPU: $(nproc) cores"
if ! "$mt" --help >/dev/null 2>&1; then
  # The machine's C++ runtime is older than the build's: use the build's.
  export LD_LIBRARY_PATH="$build/deps-cxx:$LD_LIBRARY_PATH"
  say "- the machine's C++ runtime is older than the build's: using the bundled one"
fi
if ! "$mt" --help >/dev/null 2>&1; then
  say "on_device: metatune does not start here:"
  { "$mt" --help 2>&1; ldd "$mt" | grep 'not found'; } | tee -a "$summary"
  exit 3
fi
say "- targets: $("$mt" plugins --json 2>&1 | python3 -c '
import json, sys
try:
    plugins = json.load(sys.stdin)["plugins"]
except Exception as e:
    print("metatune plugins failed:", e); sys.exit()
out = []
for p in plugins:
    if not p.get("loaded"):
        out.append("%s refused (%s): %s" % (p.get("path", "?"), p.get("refusal", "?"), p.get("message", "")))
    for c in p.get("components", []):
        if c.get("kind") == "target" and c["name"] in ("cuda", "cublas", "llvm.cpu"):
            d = c.get("device", {})
            out.append("%s: %s" % (c["name"], d.get("unavailable") or d.get("device") or d.get("target", "ok")))
print("; ".join(out))
')"

if [[ -z "${SKIP_TESTS:-}" ]]; then
  say ""
  say "## On-device tests (cap ${TESTS_SECONDS:-120} s)"
  start=$(date +%s)
  # Every binary runs; the status is the first failure's.
  timeout -k 10 "${TESTS_SECONDS:-120}" bash -c '
    rc=0
    first_failure() { ((rc)) || rc=$1; }
    # The wgmma probe and schedules first: the newest code, and short.
    "$1/tests/gpu/gpu_wgmma_probe_tests" --gtest_color=no || first_failure $?
    "$1/tests/gpu/gpu_cuda_device_tests" --gtest_color=no --gtest_filter="*Warpgroup*" ||
      first_failure $?
    "$1/tests/gpu/gpu_cuda_device_tests" --gtest_color=no --gtest_filter="-*Warpgroup*" ||
      first_failure $?
    "$1/tests/cublas/cublas_tests" --gtest_color=no --gtest_filter="*OnDevice*" || first_failure $?
    exit "$rc"
  ' _ "$build" >"$out/tests.log" 2>&1
  rc=$?
  grep -E '^\[ cuda \] (total|f16|tensor|wgmma)|^\[ wgmma (swizzle )?\]|^\[ tma \]|^\[  (PASSED|FAILED)  \]|^\[  SKIPPED \] [0-9]+ test' \
    "$out/tests.log" | tee -a "$summary"
  say "- tests: exit $rc after $(($(date +%s) - start)) s$([[ $rc == 124 ]] && echo ' (cut at the cap)')"
  # TMA copies join the f16 tuning only once their kernels have computed right here.
  if grep -q '^\[       OK \] CudaOnDevice.TmaWarpgroupMmaSchedulesMatchTheInterpreter' "$out/tests.log"; then
    export TMA=1
    say "- TMA wgmma samples correct on the device: the f16 tuning measures that space too"
  else
    say "- TMA wgmma samples not confirmed on the device: the f16 tuning leaves them out"
  fi
  if [[ -n "${TMA:-}" ]] &&
    grep -q '^\[       OK \] CudaOnDevice.ProducerWarpgroupMmaSchedulesMatchTheInterpreter' "$out/tests.log"; then
    export PRODUCER=1
    say "- producer-warpgroup wgmma samples correct on the device: the f16 tuning measures them too"
  else
    say "- producer-warpgroup wgmma samples not confirmed on the device: the f16 tuning leaves them out"
  fi
fi

if [[ -z "${SKIP_BENCH:-}" ]]; then
  say ""
  say "## bench/gpu"
  # The operators share what is left, less a minute for the tables and the archive: run.sh
  # gives each its part of the time to DEADLINE as it comes to it, so the time one does not
  # use goes to the next.
  export DEADLINE=$((began + ${TOTAL_SECONDS:-540} - 60))
  left=$((DEADLINE - $(date +%s)))
  ((left >= 150)) || { say "on_device: only ${left} s left for the benchmark"; exit 4; }
  say "- ${left} s for the operators${ONLY:+ $ONLY}, shared ${SHARES:-2,1,1} (each at most ${OP_SECONDS:-160} s)"
  BUILD="$build" OUT="$out/bench" bash "$root/bench/gpu/run.sh" 2>"$out/bench.log" |
    tee -a "$summary"
  bench_rc=$?
  tail -n 20 "$out/bench.log" | tee -a "$summary"
  (cd "$out" && tar -czf bench.tar.gz bench.log $([[ -d bench ]] && echo bench) &&
    rm -rf bench bench.log)
  exit $bench_rc
fi
