#!/usr/bin/env bash
# The same schedules with and without lowering's automatic unrolling: the N fastest records of
# a tuning database whose unroll depth is > 0 are rebuilt and timed with the pass on and off,
# alternately (`metatune replay`, fresh process each time), and the times printed side by side.
# Isolates what unrolling does to a kernel from what it does to the search.
#
#   bash bench/auto_unroll/same_schedules.sh DB [N]     (default N = 6)
set -euo pipefail
cd "$(dirname "$0")/../.."
DB=$1
N=${2:-6}
BIN=${METATUNE:-build/bin/metatune}
time_of() { # record, DISABLE value
  METATUNE_DISABLE_AUTO_UNROLL=$2 "$BIN" replay --db "$DB" --record "$1" --repeats 5 --json \
    2>/dev/null | tail -n 1 | jq -r '.seconds * 1e3'
}
printf "%8s %8s %12s %12s %8s\n" record depth "on (ms)" "off (ms)" off/on
shown=0
for id in $(sqlite3 "$DB" \
  "SELECT id FROM records WHERE error IS NULL AND target LIKE 'llvm%' ORDER BY mean_secs"); do
  depth=$("$BIN" replay --db "$DB" --record "$id" --print-ir --repeats 1 2>/dev/null |
    grep -o 'pragma_auto_unroll_max_step": [0-9]*' | grep -o '[0-9]*$' | sort -un | tr '\n' ' ' ||
    true)
  [ -n "$depth" ] || continue
  on=$(time_of "$id" 0)
  off=$(time_of "$id" 1)
  on2=$(time_of "$id" 0)
  off2=$(time_of "$id" 1)
  awk -v id="$id" -v d="${depth% }" -v a="$on" -v b="$off" -v c="$on2" -v e="$off2" 'BEGIN {
    on = (a < c ? a : c); off = (b < e ? b : e)
    printf "%8s %8s %12.3f %12.3f %8.2f\n", id, d, on, off, off / on }'
  shown=$((shown + 1))
  [ "$shown" -lt "$N" ] || break
done
