#!/usr/bin/env bash
# bench/model/transformers_check's Python environment: a virtual environment (.venv beside this
# script, or $MT_TC_VENV) with CPU torch, transformers, safetensors and numpy.
#
# torch: the CPU-only wheel from download.pytorch.org's CPU index first (about 200 MB); where
# that index cannot be reached (only PyPI may be), PyPI's default Linux torch, which also pulls
# the CUDA runtime packages (several GB; they are not used: the check runs on the CPU).
# Silent when the environment is already complete (a stamp records what was installed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${MT_TC_VENV:-$here/.venv}"
stamp="$venv/.mt_transformers_check"
# The versions this check was run with (override for others, e.g. TRANSFORMERS_SPEC="transformers<5").
TORCH_SPEC="${TORCH_SPEC:-torch==2.15.0}"
TRANSFORMERS_SPEC="${TRANSFORMERS_SPEC:-transformers==5.25.0}"
OTHER_SPECS="${OTHER_SPECS:-safetensors==0.8.0 numpy==2.4.6}"
want="$TORCH_SPEC $TRANSFORMERS_SPEC $OTHER_SPECS"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$want" ]; then
  exit 0
fi

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "transformers_check setup: installing python3-venv"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-venv
fi

echo "transformers_check setup: virtual environment $venv ($want)"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
t0=$(date +%s)
torch_from=""
if "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  torch_from="$(sed -n 's/^torch from: //p' "$stamp" 2>/dev/null | head -1)"
  torch_from="${torch_from:-already installed}"
elif "${pip[@]}" --retries 0 --timeout 20 "$TORCH_SPEC" \
  --index-url https://download.pytorch.org/whl/cpu; then
  torch_from="https://download.pytorch.org/whl/cpu (CPU wheel)"
else
  echo "transformers_check setup: the PyTorch CPU index cannot be reached; torch from PyPI" \
    "(the default Linux wheel, with its CUDA packages: several GB)"
  "${pip[@]}" "$TORCH_SPEC"
  torch_from="PyPI (default wheel)"
fi
"${pip[@]}" $TRANSFORMERS_SPEC $OTHER_SPECS
t1=$(date +%s)
versions="$("$venv/bin/python" -c 'import torch, transformers, safetensors, numpy
print(f"torch {torch.__version__}, transformers {transformers.__version__}, safetensors {safetensors.__version__}, numpy {numpy.__version__}")')"
{
  echo "$want"
  echo "torch from: $torch_from"
  echo "$versions"
  echo "pip ran $((t1 - t0)) s this time; environment $(du -sh "$venv" | cut -f1)"
} >"$stamp"
sed 1d "$stamp" | sed 's/^/transformers_check setup: /'
