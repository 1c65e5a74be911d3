#!/usr/bin/env bash
# Runs the README's two commands (its first ```sh block) in a fresh Debian 12 root, as a new
# user on a new machine would, and prints what passed. It catches what CI on a well-stocked
# machine hides: a package the project needs that no script installs.
#
#   bash scripts/fresh-check.sh              # both commands (~40 min on 2 cores)
#   ONLY=2 bash scripts/fresh-check.sh       # only the README's second command (tests)
#   KEEP=1 bash scripts/fresh-check.sh       # keep the root afterwards (its path is printed; later runs leave it)
#
# Needs root (debootstrap, chroot, bind mounts). The root is a debootstrap minbase of bookworm
# in a temporary folder; the working tree (tracked and untracked files that git does not
# ignore) is copied into /src inside it. /usr/local/cuda comes with this kind of machine, not
# from Debian, so it is bound into the root read-only instead of installed. Too slow for CI:
# run it before resolving anything that touches setup, dependencies or CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then echo "fresh-check: needs root (debootstrap, chroot)" >&2; exit 2; fi
if ! command -v debootstrap >/dev/null; then
  echo "fresh-check: installing debootstrap"
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
fi

mapfile -t COMMANDS < <(awk '/^```sh/{f=1; next} /^```/{if (f) exit} f && NF' README.md | sed 's/[[:space:]]*#.*$//')
if [ "${#COMMANDS[@]}" != 2 ]; then
  echo "fresh-check: README.md's first sh block should hold exactly two commands, found ${#COMMANDS[@]}" >&2
  exit 2
fi

# Roots that earlier runs left behind when they were killed before their cleanup (a session
# that ended mid-run): 6 GB each, with /proc, /sys, /dev and the CUDA toolkit still bound into
# them. Their mounts are undone, then they are removed; never the root of a run still going
# (its .owner file names a live process) or kept (KEEP=1: it says `kept`); a root from before
# .owner files is left while any other fresh-check runs.
others=$(pgrep -f 'scripts/fresh-check.sh' | grep -vx "$$" || true)
for old in /var/tmp/metatune-fresh.??????; do
  [ -d "$old" ] || continue
  pid=$(cat "$old.owner" 2>/dev/null || true)
  [ "$pid" = kept ] && continue # KEEP=1 asked for it
  if [ -n "$pid" ]; then kill -0 "$pid" 2>/dev/null && continue; else [ -n "$others" ] && continue; fi
  awk -v root="$old/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if awk -v root="$old/" 'index($2, root) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    echo "fresh-check: $old is still mounted; left as it is" >&2
    continue
  fi
  echo "fresh-check: removing $old, left by an earlier run"
  rm -rf --one-file-system "$old" "$old.owner" "$old.debootstrap.log"
done

ROOT=$(mktemp -d /var/tmp/metatune-fresh.XXXXXX)
echo $$ >"$ROOT.owner"
MOUNTS=()
cleanup() {
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  if [ -z "${KEEP:-}" ]; then
    rm -rf --one-file-system "$ROOT" "$ROOT.owner"
  else
    echo kept >"$ROOT.owner"
    echo "fresh-check: root kept at $ROOT"
  fi
}
trap cleanup EXIT
bind() { # bind SRC DST [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  MOUNTS+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

t0=$(date +%s)
echo "fresh-check: debootstrap bookworm (minbase) into $ROOT"
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
  { tail -20 "$ROOT.debootstrap.log"; exit 1; }
rm -f "$ROOT.debootstrap.log"
# Debian's own apt sources plus this machine's apt settings (no proxy is assumed), DNS.
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$ROOT/etc/apt/sources.list.d/"
  rm -f "$ROOT/etc/apt/sources.list"
fi
cp /etc/apt/apt.conf.d/99* "$ROOT/etc/apt/apt.conf.d/" 2>/dev/null || true
bind /proc "$ROOT/proc"
bind /sys "$ROOT/sys"
bind /dev "$ROOT/dev"
bind /dev/pts "$ROOT/dev/pts"
if [ -d /usr/local/cuda ]; then bind "$(readlink -f /usr/local/cuda)" "$ROOT/usr/local/cuda" ro; fi
mkdir -p "$ROOT/src"
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && echo "{}"' |
  tar -C "$REPO" -cf - -T - | tar -C "$ROOT/src" -xf -
echo "fresh-check: root ready in $(($(date +%s) - t0)) s"

status=0
summary=()
for i in "${!COMMANDS[@]}"; do
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != $((i + 1)) ]; then continue; fi
  cmd=${COMMANDS[i]}
  log="/var/tmp/metatune-fresh-$((i + 1)).log"
  echo "fresh-check: [$((i + 1))] $cmd   (log: $log)"
  s=$(date +%s)
  if chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb /bin/bash -c "cd /src && $cmd" >"$log" 2>&1; then
    r=passed
  else
    r="FAILED (exit $?)"
    status=1
  fi
  summary+=("[$((i + 1))] $r in $(($(date +%s) - s)) s: $cmd")
  tail -5 "$log" | sed 's/^/    /'
done
echo "fresh-check: summary (fresh Debian 12 root, total $(($(date +%s) - t0)) s)"
printf '  %s\n' "${summary[@]}"
exit $status
