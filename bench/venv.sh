#!/usr/bin/env bash
# A benchmark's Python environment: `bash bench/venv.sh DIR` makes a virtual environment
# (DIR/.venv, or $MT_BENCH_VENV) with the pinned packages of DIR/requirements.txt. Silent when
# it is already up to date: a stamp in the environment remembers the requirements it was made
# from. Each benchmark folder's setup.sh calls it with its own folder.
set -euo pipefail
if [ $# != 1 ] || [ ! -f "$1/requirements.txt" ]; then
  echo "usage: bash bench/venv.sh DIR   (DIR holds requirements.txt)" >&2
  exit 2
fi
dir="$(cd "$1" && pwd)"
name="bench/$(basename "$dir")"
venv="${MT_BENCH_VENV:-$dir/.venv}"
req="$dir/requirements.txt"
stamp="$venv/.mt_requirements"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
  exit 0
fi

# Debian splits venv's pip bootstrap into python3-venv; install it as scripts/setup.sh installs
# packages.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "$name setup: installing python3-venv"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-venv
fi

echo "$name setup: virtual environment $venv ($(tr '\n' ' ' <"$req" | grep -o '[a-z_]*==[^ ]*' | tr '\n' ' '))"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
cp "$req" "$stamp"
