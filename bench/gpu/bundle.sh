#!/usr/bin/env bash
# bench/gpu/bundle.sh: packs what bench/gpu and the on-device CUDA tests need into one archive,
# for a GPU machine that cannot build metatune: it has the CUDA toolkit and driver but none of
# the build's Debian packages (LLVM, xgboost, sqlite, jemalloc, ...), and no registry to get
# them from. The archive holds a pruned copy of the build tree at its own absolute path (the
# binaries' RPATHs and the tests' plugin paths point there) and, under deps/, every shared
# library those files load that is not part of the C/C++ runtime or CUDA. bench/gpu/on_device.sh
# unpacks it there and runs.
#   bash bench/gpu/bundle.sh            # -> .devbundle/metatune-gpu.tar.xz
#   BUILD=build-x BUNDLE=/tmp/b bash bench/gpu/bundle.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ -f "${BUILD:-$root/build}/CMakeCache.txt" ]] ||
  { echo "bench/gpu/bundle.sh: no build in ${BUILD:-$root/build} (run scripts/build.sh)" >&2; exit 2; }
build="$(cd "${BUILD:-$root/build}" && pwd)"
out="${BUNDLE:-$root/.devbundle}"

plugins=(cuda cublas llvm_cpu std_rules cost_models search_strategies)
tests=(tests/gpu/gpu_cuda_device_tests tests/gpu/gpu_wgmma_probe_tests tests/cublas/cublas_tests)
cmake --build "$build" --target metatune_cli "${plugins[@]}" gpu_cuda_device_tests \
  gpu_wgmma_probe_tests cublas_tests

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
dest="$stage$build"
mkdir -p "$dest/lib/metatune/plugins" "$dest/deps"

files=(bin/metatune "${tests[@]}")
for p in "${plugins[@]}"; do files+=("lib/metatune/plugins/$p.so"); done
# metatune's own shared libraries, wherever the build put them (core/ keeps libmetatune.so).
while IFS= read -r f; do files+=("${f#"$build"/}"); done < <(
  find "$build" -path "$build/tests" -prune -o -path "$build/_deps" -prune -o \
    \( -name 'libmetatune*.so*' -a \( -type f -o -type l \) \) -print)
for f in "${files[@]}"; do
  mkdir -p "$dest/$(dirname "$f")"
  cp -P "$build/$f" "$dest/$f"
  # Debug info is most of each file's size; the symbols stay.
  [[ -L "$dest/$f" ]] || strip --strip-debug "$dest/$f"
done

# The libraries they load, but not the C library, the C++ runtime or the compiler's support
# library: the GPU machine has its own (newer ones serve older binaries; an older C library
# there is reported by on_device.sh). libcuda, libnvrtc and libcublas are opened at run time
# from the machine's own driver and toolkit, so ldd does not list them.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
for f in "${files[@]}"; do
  [[ -L "$build/$f" ]] && continue
  ldd "$build/$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip || "$path" == "$build"/* ]] && continue
  cp -L "$path" "$dest/deps/$name"
  strip --strip-debug "$dest/deps/$name" 2>/dev/null || true
done
# The C++ runtime too, kept apart: on_device.sh uses it only where the machine's is older.
mkdir -p "$dest/deps-cxx"
for name in libstdc++.so.6 libgcc_s.so.1; do
  cp -L "$(ldd "$build/bin/metatune" | awk -v n="$name" '$1 == n {print $3}')" "$dest/deps-cxx/"
done
echo "$build" >"$stage/BUILD_PATH"
git -C "$root" rev-parse HEAD >"$stage/COMMIT" 2>/dev/null || true

mkdir -p "$out"
# xz: 200 MB unpacked, most of it LLVM (123 MB), 44 MB packed; the device tool carries at most
# 64 MiB with the working tree.
tar -C "$stage" -cf - . | xz -T0 -6 >"$out/metatune-gpu.tar.xz"
# The device tool carries at most 64 MiB with the working tree (about 5 MB).
size=$(stat -c %s "$out/metatune-gpu.tar.xz")
((size < 58 * 1024 * 1024)) ||
  echo "bench/gpu/bundle.sh: warning: the archive is $((size >> 20)) MiB, near the 64 MiB a" \
    "device call carries with the working tree" >&2
du -h "$out/metatune-gpu.tar.xz" | awk '{print "bench/gpu/bundle.sh: " $2 " (" $1 "), build " \
  "at '"$build"', commit '"$(cat "$stage/COMMIT" 2>/dev/null | cut -c1-7)"'"}'
