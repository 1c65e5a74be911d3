#!/usr/bin/env bash
# bench/chat: a conversation of TURNS user turns through `metatune model chat`, each turn's
# prefill time with the prefix cache (the turn computes only what follows the prefix its prompt
# shares with the key/value cache: the new turn and the template's markup) against the same
# conversation prefilled whole every turn (--no-prefix-cache), in the same run, alternating
# ROUNDS times; medians per turn, the ratio of the totals. The greedy replies of both must be
# the same tokens (a row depends on the tokens up to its own position only), or it exits 1.
# The model is bench/llama's Llama-style checkpoint (125M parameters, random weights) with a
# word-level tokenizer and a Llama 3-like chat template written beside it.
#
#   bash bench/model/setup.sh && bash bench/chat/run.sh
#   PRESET=tiny TURNS=4 bash bench/chat/run.sh          # the harness itself, in seconds
#
# Variables: PRESET (small), SEED (0), TURNS (8), WORDS (48 a turn), NEW_TOKENS (16 a reply),
# ROUNDS (2), IMPLEMENTATIONS (library), FPMATH (f32), CKPT (build/bench_llama), METATUNE.
# Rows are appended to bench/results/chat_prefix_cache.csv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
ckpt="${CKPT:-$build/bench_llama}"
out="${OUT:-$root/bench/results}"
PRESET="${PRESET:-small}"
SEED="${SEED:-0}"
TURNS="${TURNS:-8}"
WORDS="${WORDS:-48}"
NEW_TOKENS="${NEW_TOKENS:-16}"
ROUNDS="${ROUNDS:-2}"
IMPLEMENTATIONS="${IMPLEMENTATIONS:-library}"
FPMATH="${FPMATH:-f32}"
if [[ ! -x "$metatune" ]]; then
  echo "bench/chat: $metatune is missing (build metatune first: bash scripts/build.sh)" >&2
  exit 2
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/mt_bench_chat.XXXXXX")"
trap 'rm -rf "$work"' EXIT

dir="$(CKPT="$ckpt" PRESET="$PRESET" SEED="$SEED" bash "$root/bench/llama/checkpoint.sh")"
python3 "$here/chat_folder.py" --checkpoint "$dir" --out "$work/model" --turns "$TURNS" \
  --words "$WORDS" --seed "$SEED" > "$work/turns.txt"

run_chat() { # MODE ROUND
  local flags=() report="$work/$1-$2.json"
  [[ "$1" == whole ]] && flags+=(--no-prefix-cache)
  "$metatune" model chat --hf "$work/model" --max-new-tokens "$NEW_TOKENS" --ignore-eos -q --log-level warn \
    --implementations "$IMPLEMENTATIONS" --fpmath "$FPMATH" --report-json "$report" \
    "${flags[@]}" < "$work/turns.txt" > /dev/null
  echo "$report"
}

reports_cached=() reports_whole=()
for ((r = 1; r <= ROUNDS; r++)); do
  echo "bench/chat: round $r of $ROUNDS (prefix cache, then whole prompts)" >&2
  reports_cached+=("$(run_chat cached "$r")")
  reports_whole+=("$(run_chat whole "$r")")
done
mkdir -p "$out"
python3 "$here/report.py" --cached "${reports_cached[@]}" --whole "${reports_whole[@]}" \
  --csv "$out/chat_prefix_cache.csv" --label "preset=$PRESET turns=$TURNS words=$WORDS new=$NEW_TOKENS implementations=$IMPLEMENTATIONS fpmath=$FPMATH cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
