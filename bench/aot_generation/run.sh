#!/usr/bin/env bash
# bench/aot_generation: greedy decoding of bench/llama's Llama-style checkpoint (125M
# parameters, random weights) from a generation artifact (`metatune model compile
# --generation`, run by libmetatune_runtime through hosts/embed_runtime: no LLVM, no core)
# against the same kernels in process (`metatune model generate --implementations tuned` or
# untuned, the same database), alternating ROUNDS times in the same run; decode tokens/s
# medians and their ratio. Both must give the same tokens (and the float64 reference's, where
# bench/llama made it), or it exits 1.
#
#   bash bench/model/setup.sh && DB=my.db bash bench/aot_generation/run.sh
#   PRESET=tiny bash bench/aot_generation/run.sh          # the harness itself, untuned
#
# Variables: DB (a tuning database: tuned kernels where it has records, else untuned),
# PRESET (small), SEED (0), PROMPT_LEN (128), NEW_TOKENS (64), ROUNDS (3), CKPT, METATUNE.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
embed="${EMBED_RUNTIME:-$build/bin/embed_runtime}"
ckpt="${CKPT:-$build/bench_llama}"
PRESET="${PRESET:-small}"
SEED="${SEED:-0}"
PROMPT_LEN="${PROMPT_LEN:-128}"
NEW_TOKENS="${NEW_TOKENS:-64}"
ROUNDS="${ROUNDS:-3}"
DB="${DB:-}"
for bin in "$metatune" "$embed"; do
  if [[ ! -x "$bin" ]]; then
    echo "bench/aot_generation: $bin is missing (build metatune first: bash scripts/build.sh)" >&2
    exit 2
  fi
done
dir="$(CKPT="$ckpt" PRESET="$PRESET" SEED="$SEED" bash "$root/bench/llama/checkpoint.sh")"
work="$(mktemp -d "${TMPDIR:-/tmp}/mt_bench_aot.XXXXXX")"
trap 'rm -rf "$work"' EXIT

vocab=$(python3 -c "import json; print(json.load(open('$dir/config.json'))['vocab_size'])")
ids=$(python3 -c "print(' '.join(str((11 + 7919 * i) % $vocab) for i in range($PROMPT_LEN)))")
capacity=1
while ((capacity < PROMPT_LEN + NEW_TOKENS)); do capacity=$((capacity * 2)); done
kernels=(--implementations untuned)
[[ -n "$DB" ]] && kernels=(--db "$DB" --implementations tuned)

echo "bench/aot_generation: compiling the artifact (prompt bucket $PROMPT_LEN, capacity $capacity)" >&2
"$metatune" model compile --hf "$dir" --generation --prompt-buckets "$PROMPT_LEN" \
  --capacities "$capacity" "${kernels[@]}" -q --log-level warn --out "$work/artifact"

aot=() inproc=()
for ((r = 1; r <= ROUNDS; r++)); do
  "$embed" "$work/artifact" -n "$NEW_TOKENS" $ids > "$work/aot$r.txt"
  aot+=("$(sed -n 's/^[0-9]* tokens, \([0-9.]*\) tokens\/s decoding$/\1/p' "$work/aot$r.txt")")
  "$metatune" model generate --hf "$dir" --prompt-ids "${ids// /,}" --max-new-tokens "$NEW_TOKENS" \
    --ignore-eos --greedy --capacities "$capacity" "${kernels[@]}" -q --log-level warn \
    --report-json "$work/gen$r.json" > /dev/null
  inproc+=("$(python3 -c "import json; print(json.load(open('$work/gen$r.json'))['decode_tokens_per_s'])")")
  echo "bench/aot_generation: round $r: artifact ${aot[-1]} tokens/s, in process ${inproc[-1]}" >&2
done
reference="$ckpt/llama-$PRESET-seed$SEED.reference-p$PROMPT_LEN-n$NEW_TOKENS.json"
python3 - "$work" "$ROUNDS" "$reference" "${aot[*]}" "${inproc[*]}" "${DB:-untuned}" <<'PY'
import json, os, statistics, sys
work, rounds, reference, aot, inproc, kernels = sys.argv[1:]
aot = [float(x) for x in aot.split()]
inproc = [float(x) for x in inproc.split()]
tokens = open(f"{work}/aot1.txt").read().split("tokens:")[1].splitlines()[0].split()
tokens = [int(t) for t in tokens]
same = all(json.load(open(f"{work}/gen{r}.json"))["new_tokens"] == tokens
           for r in range(1, int(rounds) + 1))
ref = ""
if os.path.exists(reference):
    want = json.load(open(reference))["new_tokens"]
    ref = f"; the float64 reference's: {'yes' if want == tokens else 'NO'}"
    same = same and want == tokens
a, i = statistics.median(aot), statistics.median(inproc)
print(f"decode tokens/s (median of {rounds}; kernels: {kernels}): artifact {a:.1f}, in process "
      f"{i:.1f}, ratio {a / i:.2f}; tokens the same: {'yes' if same else 'NO'}{ref}")
sys.exit(0 if same else 1)
PY
