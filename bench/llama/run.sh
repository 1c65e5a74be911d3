#!/usr/bin/env bash
# bench/llama: prefill latency (prompt of PROMPT_LEN tokens; both sides compute the last
# position's logits, what generation needs) and greedy decode tokens/s
# (NEW_TOKENS after it) of a small Llama-style decoder (125M parameters, random weights in
# Hugging Face naming), by ONNX Runtime and, when the metatune build has `model generate`,
# metatune untuned, with the library, tuned and best (columns ending in _bf16: the same policy
# with --fpmath bf16, its logits within TOL_BF16); every greedy generation checked against
# reference.py's float64 one (recomputing the whole sequence each step), the prefills' logits
# against its forward (metatune's whole model through `model bench`: every position). Rows are appended to bench/results/llama_generation.csv.
#
#   bash bench/model/setup.sh && bash bench/llama/run.sh
#   PRESET=tiny bash bench/llama/run.sh                 # the harness itself, in seconds
#   TRIALS=0 DB=my.db bash bench/llama/run.sh           # no tuning: that database as it is
#   TRIALS=0 TRIALS_BF16=300 DB=my.db BENCH_COLUMNS="ort metatune_library_bf16 metatune_tuned_bf16 metatune_best_bf16" bash bench/llama/run.sh
#   BENCH_COLUMNS="ort" REPEATS=20 bash bench/llama/run.sh
#
# The checkpoint is made once into $CKPT (default build/bench_llama/) and reused while PRESET
# and SEED match, and so is the reference generation (minutes on the small preset).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
venv="${MT_BENCH_VENV:-$root/bench/model/.venv}"
py="$venv/bin/python"
ckpt="${CKPT:-$build/bench_llama}"
out="${OUT:-$root/bench/results}"
csv="$out/llama_generation.csv"
PRESET="${PRESET:-small}"
SEED="${SEED:-0}"
PROMPT_LEN="${PROMPT_LEN:-128}"
NEW_TOKENS="${NEW_TOKENS:-64}"
THREADS="${THREADS:-2}"         # ONNX Runtime's intra-op threads
REPEATS="${REPEATS:-10}"        # timed prefills (median)
UNTUNED_REPEATS="${UNTUNED_REPEATS:-3}"
GENERATIONS="${GENERATIONS:-3}" # timed ONNX Runtime generations (median tokens/s)
ROUNDS="${ROUNDS:-3}"           # every column once per round, in turn; medians over rounds
TRIALS="${TRIALS:-900}"         # metatune's tuning budget (records in DB) before tuned/best
TUNE_FLAGS="${TUNE_FLAGS:-}"    # further `metatune model tune` flags (e.g. --cost-model-per-task)
# Records for the *_bf16 columns' own tuning (`model tune --fpmath bf16`: bf16 products, AMX tile
# products on a CPU with them, filed apart from the f32 records, which serve bf16 runs too), and
# its flags (e.g. --tasks to tune only the prompt's matrix products); 0 = none.
TRIALS_BF16="${TRIALS_BF16:-0}"
TUNE_FLAGS_BF16="${TUNE_FLAGS_BF16:-}"
DB="${DB:-}"                    # the tuning database (default: next to the checkpoint)
TOL="${TOL:-1e-4}"
TOL_BF16="${TOL_BF16:-3e-2}"    # the same for the --fpmath bf16 columns (*_bf16)
BENCH_COLUMNS="${BENCH_COLUMNS:-ort metatune_untuned metatune_library metatune_tuned metatune_best metatune_library_bf16}"
run_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
work="$(mktemp -d "${TMPDIR:-/tmp}/mt_bench_llama.XXXXXX")"
trap 'rm -rf "$work"' EXIT

declare -A prefill decode prefill_check tokens_check detail cmd prefill_rounds decode_rounds \
  first_tokens of_ort
runnable=()

field() { "$py" "$root/bench/model/json_field.py" "$@"; }

csv_quote() { local s="${1//\"/\"\"}"; printf '"%s"' "$s"; }

# The checkpoint folder, made on first use (checkpoint.sh).
checkpoint() {
  CKPT="$ckpt" PRESET="$PRESET" SEED="$SEED" MT_BENCH_VENV="$venv" bash "$here/checkpoint.sh"
}

# The float64 greedy generation (recomputed every step), made once per checkpoint and length.
reference_generation() {
  local file="$ckpt/llama-$PRESET-seed$SEED.reference-p$PROMPT_LEN-n$NEW_TOKENS.json"
  if [[ ! -f "$file" || "$file" -ot "$dir/config.json" ]]; then
    echo "bench/llama: float64 reference generation (recomputing every step; cached in $file)" >&2
    "$py" "$here/reference.py" --hf "$dir" --prompt-ids "$prompt" \
      --max-new-tokens "$NEW_TOKENS" --out "$file.tmp"
    mv "$file.tmp" "$file"
  fi
  echo "$file"
}

# A comparison with reference.py: the verdict of one --compare LABEL=FILE (logits within
# tolerance $2, default TOL).
verdict() {
  local line
  line="$("$py" "$here/reference.py" --hf "$dir" --prompt-ids "$prompt" \
    --max-new-tokens "$NEW_TOKENS" --generation "$refgen" --tol "${2:-$TOL}" --compare "$1" || true)"
  [[ -n "$line" ]] && field "$line" verdict || echo "FAIL no comparison"
}

# A column's policy and --fpmath: "best_bf16" is `--implementations best --fpmath bf16`.
policy() { echo "${1%_bf16}"; }
is_bf16() { [[ "$1" == *_bf16 ]]; }
fpmath_args() { if is_bf16 "$1"; then echo "--fpmath bf16"; fi; }

# bf16 rounds the products' inputs, so greedy tokens may part from the float64 reference's
# where two logits are close: how far they agree is reported, not failed.
bf16_tokens_verdict() {
  if [[ "$1" == "FAIL tokens differ from new token "* ]]; then
    local k="${1#FAIL tokens differ from new token }"
    echo "ok for bf16: the first ${k%% *} of $NEW_TOKENS new tokens equal the float64 reference's"
  else
    echo "$1"
  fi
}

column_ort() {
  local json
  cmd[ort]="bench/llama/ort_llama.py --hf $dir --prompt-len $PROMPT_LEN --max-new-tokens $NEW_TOKENS --threads $THREADS --repeats $REPEATS --generations $GENERATIONS --check --reference $(basename "$refgen")"
  json="$("$py" "$here/ort_llama.py" --hf "$dir" --prompt-ids "$prompt" \
    --max-new-tokens "$NEW_TOKENS" --threads "$THREADS" --repeats "$REPEATS" \
    --generations "$GENERATIONS" --check --tol "$TOL" --reference "$refgen" || true)"
  [[ -n "$json" ]] || { echo "bench/llama: ort_llama.py failed" >&2; return 0; }
  echo "$json" >"$work/ort.json"
  prefill_rounds[ort]+=" $(printf '%.3f' "$(field "$json" prefill_ms)")"
  decode_rounds[ort]+=" $(printf '%.2f' "$(field "$json" decode_tokens_per_s)")"
  "$py" - "$work/ort.json" >"$work/ort.fields" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["variants"]
pre = {k: x["check"]["prefill"] for k, x in v.items()}
print(("ok" if all(c["ok"] for c in pre.values()) else "FAIL") + " " +
      ", ".join(f"{k} rel_err={c.get('rel_err', float('nan')):.2e}" for k, c in pre.items()))
print(f"ok {len(r['new_tokens'])} tokens equal ({', '.join(v)})" if all(x["check"]["ok"] for x in v.values()) else
      "FAIL " + "; ".join(f"{k}: {x['check']}" for k, x in v.items() if not x["check"]["ok"]))
print(f"onnxruntime {r['ort_version']}, {r['threads']} threads; prefill best: {r['prefill_variant']}, "
      f"decode best: {r['decode_variant']}; " +
      " ".join(f"{k}={x['prefill_ms']}ms/{x['decode_tokens_per_s']}tok/s" for k, x in v.items()))
EOF
  { read -r prefill_check[ort]; read -r tokens_check[ort]; read -r detail[ort]; } <"$work/ort.fields"
}

needs_db() { [[ "$(policy "$1")" == tuned || "$(policy "$1")" == best ]]; }

# metatune's tuning database, tuned up to TRIALS records first (`model tune` resumes).
database() {
  db="${DB:-$ckpt/llama-$PRESET-seed$SEED-seq$PROMPT_LEN.db}"
  tuned_note="tuning: none this run"
  if ((TRIALS > 0)); then
    local t0=$SECONDS
    # The prefill at the prompt's length and the decode step at the capacity generation uses
    # (the smallest power of two from 64 that holds prompt + new tokens, as model generate's
    # default --capacities).
    local cap=64
    while ((cap < PROMPT_LEN + NEW_TOKENS)); do cap=$((cap * 2)); done
    "$metatune" model tune --hf "$dir" --seq "$PROMPT_LEN" --decode-capacities "$cap" \
      --trials "$TRIALS" --db "$db" -q $TUNE_FLAGS \
      >"$work/tune.log" 2>&1 || { cat "$work/tune.log" >&2; return 1; }
    tuned_note="tuning: $TRIALS trials${TUNE_FLAGS:+ ($TUNE_FLAGS)}, $(((SECONDS - t0) / 60)) min this run"
  fi
  if ((TRIALS_BF16 > 0)); then
    local t1=$SECONDS cap=64
    while ((cap < PROMPT_LEN + NEW_TOKENS)); do cap=$((cap * 2)); done
    "$metatune" model tune --hf "$dir" --seq "$PROMPT_LEN" --decode-capacities "$cap" \
      --fpmath bf16 --trials "$TRIALS_BF16" --db "$db" -q $TUNE_FLAGS_BF16 \
      >"$work/tune_bf16.log" 2>&1 || { cat "$work/tune_bf16.log" >&2; return 1; }
    tuned_note+="; bf16 tuning: $TRIALS_BF16 trials${TUNE_FLAGS_BF16:+ ($TUNE_FLAGS_BF16)}, $(((SECONDS - t1) / 60)) min"
  fi
}

# One policy through `metatune model generate`: new tokens, its prefill and decode speed.
generate() {
  local p="$1" report="$work/generate.$1.json" args=()
  # The library policy takes the tuned kernel where the library implements no task (as
  # `model bench` below gives it the database).
  if needs_db "$p" || [[ "$(policy "$p")" == library && -n "${db:-}" && -f "${db:-}" ]]; then
    args=(--db "$db")
  fi
  local -a fp
  read -ra fp <<<"$(fpmath_args "$p")"
  args+=("${fp[@]}")
  local repeats="$REPEATS"
  [[ "$p" == untuned ]] && repeats="$UNTUNED_REPEATS"
  cmd[metatune_$p]="metatune model generate --hf $dir --prompt-ids (the $PROMPT_LEN ids) --max-new-tokens $NEW_TOKENS --greedy --ignore-eos --implementations $(policy "$p") --prefill-repeats $repeats ${args[*]:+${args[*]} }--report-json FILE"
  if ! "$metatune" model generate --hf "$dir" --prompt-ids "$prompt" \
    --max-new-tokens "$NEW_TOKENS" --greedy --ignore-eos --implementations "$(policy "$p")" \
    "${args[@]}" --prefill-repeats "$repeats" --report-json "$report" >"$work/generate.$p.log" 2>&1; then
    tail -5 "$work/generate.$p.log" >&2
    tokens_check[metatune_$p]="FAIL model generate failed"
    return 0
  fi
  decode_rounds[metatune_$p]+=" $(printf '%.2f' "$(field "$(cat "$report")" decode_tokens_per_s)")"
  # The prefill of generation, as ONNX Runtime's: the last position's logits only.
  prefill_rounds[metatune_$p]+=" $(printf '%.3f' "$(field "$(cat "$report")" prefill_ms)")"
  # The tokens are checked against the reference in the first round; later rounds must give
  # the same ones.
  local tokens
  tokens="$(field "$(cat "$report")" new_tokens)"
  if [[ -z "${first_tokens[metatune_$p]:-}" ]]; then
    first_tokens[metatune_$p]="$tokens"
    tokens_check[metatune_$p]="$(verdict "metatune_$p=$report")"
    if is_bf16 "$p"; then tokens_check[metatune_$p]="$(bf16_tokens_verdict "${tokens_check[metatune_$p]}")"; fi
  elif [[ "$tokens" != "${first_tokens[metatune_$p]}" ]]; then
    tokens_check[metatune_$p]="FAIL the tokens differ between rounds"
  fi
}

# Each policy through `metatune model bench` (median of REPEATS, the untuned one of
# UNTUNED_REPEATS): the whole model, every position's logits, checked against the reference;
# its latency goes to the details (the prefill column is generation's, above). $3: "bf16"
# for the *_bf16 columns (--fpmath bf16, logits within TOL_BF16).
bench() {
  local policies="$1" repeats="$2" suffix="${3:+_$3}" p c dbargs=() fp=() tol="$TOL"
  for p in ${policies//,/ }; do
    if needs_db "$p"; then dbargs=(--db "$db"); fi
  done
  if [[ -n "$suffix" ]]; then fp=(--fpmath "$3"); tol="$TOL_BF16"; fi
  rm -rf "$work/bench"
  mkdir -p "$work/bench"
  "$metatune" model bench --hf "$dir" --tokens "$prompt" --repeats "$repeats" \
    --policies "$policies" "${dbargs[@]}" "${fp[@]}" -q --save-output "$work/bench.json" \
    --save-outputs "$work/bench" >"$work/bench.txt" 2>&1 || { cat "$work/bench.txt" >&2; return 0; }
  for p in ${policies//,/ }; do
    c="metatune_$p$suffix"
    detail[$c]="${detail[$c]:+${detail[$c]}; }whole model (every position's logits) $("$py" -c 'import json,sys; r={x["implementations"]: x for x in json.load(open(sys.argv[1]))}; print(round(r[sys.argv[2]]["latency_ms"], 2))' "$work/bench.json" "$p") ms"
    detail[$c]="${detail[$c]:+${detail[$c]}; }$("$py" -c 'import json,sys; r={x["implementations"]: x for x in json.load(open(sys.argv[1]))}; print(r[sys.argv[2]]["kernels"])' "$work/bench.json" "$p")"
    cmd[$c]+="; metatune model bench --hf $dir --tokens (the same ids) --repeats $repeats --policies $policies ${dbargs[*]}${fp[*]:+ ${fp[*]}}"
    if [[ -f "$work/bench/$p.npy" ]]; then
      prefill_check[$c]="$(verdict "$c=$work/bench/$p.npy" "$tol")"
    fi
  done
}

# Whether metatune can generate, and the tuning database; fills runnable (the policies).
metatune_columns() {
  local c p want=()
  for c in $BENCH_COLUMNS; do [[ "$c" == metatune_* ]] && want+=("${c#metatune_}"); done
  ((${#want[@]})) || return 0
  # CLI11 answers --help of an unknown subcommand with the parent's help and exit code 0,
  # so the help text must be generate's own.
  if [[ ! -x "$metatune" ]] ||
    ! "$metatune" model generate --help >"$work/generate.help" 2>&1 ||
    ! grep -q -- --max-new-tokens "$work/generate.help"; then
    echo "metatune model generate not available ($metatune)"
    for p in "${want[@]}"; do detail[metatune_$p]="metatune model generate not available"; done
    return 0
  fi
  for p in "${want[@]}"; do
    if needs_db "$p"; then
      database || echo "bench/llama: tuning failed" >&2
      break
    fi
  done
  for p in "${want[@]}"; do
    if needs_db "$p" && [[ ! -f "${db:-}" ]]; then
      detail[metatune_$p]="no tuning database"
      continue
    fi
    runnable+=("$p")
    if needs_db "$p"; then detail[metatune_$p]="$tuned_note"; fi
  done
}

# After the rounds: each runnable policy's whole model through `model bench`.
metatune_whole_models() {
  local p quick=() bf16=()
  for p in "${runnable[@]}"; do
    if is_bf16 "$p"; then
      bf16+=("$(policy "$p")")
    elif [[ "$p" != untuned ]]; then
      quick+=("$p")
    fi
  done
  if [[ " ${runnable[*]} " == *" untuned "* ]]; then bench untuned "$UNTUNED_REPEATS"; fi
  if ((${#quick[@]})); then bench "$(IFS=,; echo "${quick[*]}")" "$REPEATS"; fi
  if ((${#bf16[@]})); then bench "$(IFS=,; echo "${bf16[*]}")" "$REPEATS" bf16; fi
}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {if (NR) printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# Per column the medians over rounds, and against ONNX Runtime the median of the rounds'
# ratios (each round's columns ran minutes apart at most: the machine's drift hits them alike).
summarise() {
  local c r
  local -a ort_pre ort_dec pre dec ratios_p ratios_d
  read -ra ort_pre <<<"${prefill_rounds[ort]:-}"
  read -ra ort_dec <<<"${decode_rounds[ort]:-}"
  for c in $BENCH_COLUMNS; do
    read -ra pre <<<"${prefill_rounds[$c]:-}"
    read -ra dec <<<"${decode_rounds[$c]:-}"
    ((${#pre[@]})) || continue
    prefill[$c]="$(median "${pre[@]}")"
    decode[$c]="$(median "${dec[@]}")"
    detail[$c]="${detail[$c]:+${detail[$c]}; }rounds: prefill ${pre[*]} ms, decode ${dec[*]} tok/s"
    [[ "$c" == ort || ${#ort_pre[@]} -ne ${#pre[@]} ]] && continue
    ratios_p=()
    ratios_d=()
    for ((r = 0; r < ${#pre[@]}; r++)); do
      ratios_p+=("$(awk -v a="${ort_pre[r]}" -v b="${pre[r]}" 'BEGIN {printf "%.4f", a / b}')")
      ratios_d+=("$(awk -v a="${dec[r]}" -v b="${ort_dec[r]}" 'BEGIN {printf "%.4f", a / b}')")
    done
    of_ort[$c]="$(median "${ratios_p[@]}") / $(median "${ratios_d[@]}")"
    detail[$c]+="; of ONNX Runtime per round (prefill speed / decode): $(
      for ((r = 0; r < ${#pre[@]}; r++)); do printf '%s/%s ' "${ratios_p[r]}" "${ratios_d[r]}"; done)"
  done
}

record() {
  local c
  mkdir -p "$out"
  if [[ ! -f "$csv" ]]; then
    echo "date,model,prompt_tokens,new_tokens,column,prefill_ms,decode_tokens_per_s,prefill_check,tokens_check,detail,command" >"$csv"
  fi
  for c in $BENCH_COLUMNS; do
    echo "$run_date,llama-$PRESET,$PROMPT_LEN,$NEW_TOKENS,$c,${prefill[$c]:-},${decode[$c]:-},$(csv_quote "${prefill_check[$c]:-not checked}"),$(csv_quote "${tokens_check[$c]:-not checked}"),$(csv_quote "${detail[$c]:-}"),$(csv_quote "${cmd[$c]:-}")" >>"$csv"
  done
}

bash "$root/bench/model/setup.sh"
dir="$(checkpoint)"
prompt="$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_model; print(",".join(map(str, bench_model.default_tokens(int(sys.argv[2]), int(sys.argv[3])))))' \
  "$here" "$PROMPT_LEN" "$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$dir/config.json")")"
refgen="$(reference_generation)"
metatune_columns
for ((round = 1; round <= ROUNDS; round++)); do
  for c in $BENCH_COLUMNS; do
    if [[ "$c" == ort ]]; then
      echo "bench/llama: round $round/$ROUNDS: ort" >&2
      column_ort
    elif [[ " ${runnable[*]} " == *" ${c#metatune_} "* ]]; then
      echo "bench/llama: round $round/$ROUNDS: metatune ${c#metatune_}" >&2
      generate "${c#metatune_}"
    fi
  done
done
metatune_whole_models
summarise
record

failed=0
printf '\n%-21s %11s %13s %15s  %s\n' column "prefill ms" "decode tok/s" "of ORT" "checks"
for c in $BENCH_COLUMNS; do
  checks="${tokens_check[$c]:+tokens: ${tokens_check[$c]}}"
  if [[ -n "${prefill_check[$c]:-}" ]]; then
    checks="${checks:+$checks; }prefill logits: ${prefill_check[$c]}"
  fi
  printf '%-21s %11s %13s %15s  %s\n' "$c" "${prefill[$c]:--}" "${decode[$c]:--}" \
    "${of_ort[$c]:--}" "${checks:-${detail[$c]:--}}"
  [[ "${prefill_check[$c]:-ok}" == ok* && "${tokens_check[$c]:-ok}" == ok* ]] || failed=1
done
printf '\n(llama-%s, prompt %s tokens, %s new tokens greedy; %s rounds, every column once per round in turn, medians over rounds; prefill: median of %s runs a round; decode tok/s = decode steps / their wall time; of ORT: median over rounds of prefill speed / decode tokens/s against ONNX Runtime in the same round; checks against the float64 reference, logits within %s x max|ref| (*_bf16: --fpmath bf16, within %s); rows appended to %s)\n' \
  "$PRESET" "$PROMPT_LEN" "$NEW_TOKENS" "$ROUNDS" "$REPEATS" "$TOL" "$TOL_BF16" "${csv#"$root"/}"
exit $failed
