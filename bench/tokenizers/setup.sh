#!/usr/bin/env bash
# bench/tokenizers's Python environment: a virtual environment (bench/tokenizers/.venv, or $MT_BENCH_VENV)
# with the pinned packages of requirements.txt. Silent when it is already up to date: a stamp
# in the environment remembers the requirements it was made from.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${MT_BENCH_VENV:-$here/.venv}"
req="$here/requirements.txt"
stamp="$venv/.mt_requirements"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
  exit 0
fi

# Debian splits venv's pip bootstrap into python3-venv; install it as scripts/setup.sh installs
# packages.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "bench/tokenizers setup: installing python3-venv"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-venv
fi

echo "bench/tokenizers setup: virtual environment $venv ($(tr '\n' ' ' <"$req" | grep -o '[a-z_]*==[^ ]*' | tr '\n' ' '))"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
cp "$req" "$stamp"
