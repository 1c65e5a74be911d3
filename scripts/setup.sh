#!/usr/bin/env bash
# Installs the Debian packages metatune needs (as root), and is quick when all are present.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build clang libclang-rt-14-dev
  libboost-dev libboost-filesystem-dev libboost-system-dev
  libspdlog-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-16-dev libdnnl-dev libxgboost-dev
  libjemalloc-dev # the executables' allocator (cmake/MetatuneAllocator.cmake)
  # libdnnl-dev only Recommends these, but dnnl-config.cmake calls find_package(OpenCL)
  ocl-icd-opencl-dev opencl-headers
  # the opencl target's device here: PoCL runs work-groups (local memory, barriers) on the CPU,
  # so every GPU schedule is checked against the interpreter without a GPU (tests label opencl)
  pocl-opencl-icd
  # the rocm target's toolchain (ROCm 5.2): clang-15 with the AMD GPU device libraries, so HIP
  # kernels compile here for gfx90a/gfx940/gfx1030 without an AMD GPU (tests label rocm); the HIP
  # runtime the plugin opens with dlopen
  hipcc rocm-device-libs libamdhip64-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "metatune setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
