#!/usr/bin/env bash
# How many lines it takes to enable rotary position embeddings on a model: every snippet in
# the repository's C++ sources (or in the files and folders given) between the markers
#   // BEGIN enable-rope <model>
#   // END enable-rope <model>
# is counted -- its non-blank lines that are not only a comment -- and printed as
#   <model> <lines> <file>:<line of BEGIN>
# A new snippet anywhere is picked up without changing this script. The snippets are real code
# run by the tests (tests/rope/enable_rope_test.cpp).
#
# Usage: bench/rope/count_lines.sh [--max N] [PATH...]
#   --max N: exit 1 when a snippet takes more than N lines (or when there is none).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
max=""
if [ "${1:-}" = "--max" ]; then
  max="${2:?--max needs a number}"
  shift 2
fi
[ $# -gt 0 ] || set -- "$root"

files=$(grep -rlE --include='*.cpp' --include='*.cc' --include='*.h' --include='*.hpp' \
  --exclude-dir='build*' --exclude-dir=.git '^[[:space:]]*//[[:space:]]*BEGIN enable-rope ' "$@" |
  sort || true)
if [ -z "$files" ]; then
  echo "no '// BEGIN enable-rope <model>' snippet found in $*" >&2
  exit 1
fi

# shellcheck disable=SC2086 # one file name per word
awk -v max="$max" -v root="$root/" '
  function where() { f = FILENAME; if (index(f, root) == 1) f = substr(f, length(root) + 1); return f }
  function fail(msg) { print where() ":" FNR ": " msg > "/dev/stderr"; bad = 1 }
  FNR == 1 && name != "" { print sfile ": snippet \"" name "\" has no END" > "/dev/stderr"; bad = 1; name = "" }
  /^[[:space:]]*\/\/[[:space:]]*BEGIN enable-rope / {
    if (name != "") fail("BEGIN inside snippet \"" name "\"")
    name = $NF; start = FNR; sfile = where(); lines = 0; next
  }
  /^[[:space:]]*\/\/[[:space:]]*END enable-rope / {
    if ($NF != name) { fail("END \"" $NF "\" does not close \"" name "\""); name = ""; next }
    printf "%s %d %s:%d\n", name, lines, where(), start
    if (max != "" && lines > max + 0) { fail("snippet \"" name "\" takes " lines " lines, more than " max) }
    name = ""; next
  }
  name != "" && $0 !~ /^[[:space:]]*$/ && $0 !~ /^[[:space:]]*(\/\/|\/\*|\*)/ { lines++ }
  END { if (name != "") fail("snippet \"" name "\" has no END"); exit bad }
' $files
