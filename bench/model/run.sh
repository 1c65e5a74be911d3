#!/usr/bin/env bash
# bench/model: BERT-base and GPT-2-small latency (batch 1, sequence 128, full forward) on the
# same random weights and the same ids (metatune's made-up ones, (t * 7919 + 11) % vocab, which
# hf_folder.py makes too), one column per implementation, and each column's output checked
# against a float64 reference forward. Rows are appended to bench/results/model_latency.csv.
#
#   bash bench/model/setup.sh && bash bench/model/run.sh      # tunes TRIALS per model first
#   TRIALS=0 bash bench/model/run.sh      # no tuning: the databases as they are
#   MODELS=gpt2-small REPEATS=20 bash bench/model/run.sh
#   BUILD=build SEQ=64 BENCH_COLUMNS="ort metatune_untuned" bash bench/model/run.sh
#   TINY=1 SEQ=16 bash bench/model/run.sh   # the harness itself, on small models in seconds
#   BENCH_COLUMNS="ort metatune_library metatune_library_bf16" TRIALS=0 bash bench/model/run.sh
#                                           # the library in f32 and with --fpmath bf16
#
# A column is a function column_NAME MODEL DIR that sets lat[NAME] (ms), detail[NAME] and
# cmd[NAME], and writes its output to "$(npy NAME)" when it can; the check then compares every
# output written. Checkpoints are made once into $CKPT (default build/bench_model/, not
# committed) and reused while their seed matches.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
venv="${MT_BENCH_VENV:-$here/.venv}"
py="$venv/bin/python"
ckpt="${CKPT:-$build/bench_model}"
out="${OUT:-$root/bench/results}"
csv="$out/model_latency.csv"
MODELS="${MODELS:-bert-base gpt2-small}"
BENCH_COLUMNS="${BENCH_COLUMNS:-ort metatune_untuned metatune_library metatune_tuned metatune_best metatune_library_bf16}"
TRIALS="${TRIALS:-900}"                 # tuning budget per model (records in its database)
UNTUNED_REPEATS="${UNTUNED_REPEATS:-3}" # untuned forwards take tens of seconds each
DB="${DB:-}"                            # the tuning databases' folder (default: $CKPT)
SEQ="${SEQ:-128}"
BATCH="${BATCH:-1}"
REPEATS="${REPEATS:-10}"
SEED="${SEED:-0}"
TOL="${TOL:-1e-4}"
TOL_BF16="${TOL_BF16:-3e-2}" # the metatune_library_bf16 column's (--fpmath bf16)
run_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
work="$(mktemp -d "${TMPDIR:-/tmp}/mt_bench_model.XXXXXX")"
trap 'rm -rf "$work"' EXIT

declare -A lat detail cmd check

setup() {
  bash "$here/setup.sh"
  if [[ ! -x "$metatune" ]]; then
    echo "bench/model: building metatune ($metatune is missing)"
    [[ -f "$build/CMakeCache.txt" ]] || cmake -S "$root" -B "$build" -G Ninja >/dev/null
    cmake --build "$build" --target metatune_cli std_layers llvm_cpu onednn_cpu std_rules
  fi
}

# The checkpoint folder of MODEL, made on first use (a few seconds to a minute each).
checkpoint() {
  local model="$1" dir="$ckpt/$1${TINY:+-tiny}-seed$SEED"
  if [[ ! -f "$dir/config.json" ]]; then
    "$py" "$here/make_checkpoint.py" --model "$model" --out "$dir" --seed "$SEED" \
      ${TINY:+--tiny} >&2
  fi
  echo "$dir"
}

npy() { echo "$work/$model.$1.npy"; }

# ONNX Runtime at its best: the fastest of ort_model.py's variants.
column_ort() {
  local model="$1" dir="$2" json
  cmd[ort]="bench/model/ort_model.py --hf $dir --seq $SEQ --batch $BATCH --repeats $REPEATS"
  json="$("$py" "$here/ort_model.py" --hf "$dir" --seq "$SEQ" --batch "$BATCH" \
    --repeats "$REPEATS" --save-output "$(npy ort)")"
  echo "$json" >>"$work/ort.jsonl"
  lat[ort]="$(field "$json" latency_ms)"
  detail[ort]="onnxruntime $(field "$json" ort_version), $(field "$json" threads) threads, best: $(field "$json" variant); $(field "$json" variants)"
}

# metatune untuned: every kernel from the llvm target's default schedule.
column_metatune_untuned() {
  local model="$1" dir="$2" text save=()
  if "$metatune" model run --help 2>/dev/null | grep -q -- --save-output; then
    save=(--save-output "$(npy metatune_untuned)")
  fi
  cmd[metatune_untuned]="metatune model run --hf $dir --seq $SEQ --batch $BATCH --repeats $UNTUNED_REPEATS"
  text="$("$metatune" model run --hf "$dir" --seq "$SEQ" --batch "$BATCH" -q \
    --repeats "$UNTUNED_REPEATS" "${save[@]}")"
  echo "$text" >&2
  lat[metatune_untuned]="$(sed -n 's/.*latency \([0-9.]*\) ms.*/\1/p' <<<"$text" | tail -1)"
  detail[metatune_untuned]="$(grep -o 'built in [0-9.]* s' <<<"$text" || true)"
}

# The model's tuning database; tuned up to TRIALS records first (`metatune model tune`
# resumes: a database that has them already costs nothing), with the minutes it took.
database() { # sets db_path and tuned_note
  local model="$1" dir="$2" db="${DB:-$ckpt}/$1-seq$SEQ-b$BATCH.db" t0 t1
  if ((TRIALS > 0)); then
    t0=$(date +%s)
    "$metatune" model tune --hf "$dir" --seq "$SEQ" --batch "$BATCH" --trials "$TRIALS" \
      --db "$db" -q >"$work/$model.tune.log" 2>&1 || { cat "$work/$model.tune.log" >&2; exit 1; }
    t1=$(date +%s)
    tuned_note="tuning: $TRIALS trials, $(awk "BEGIN{printf \"%.1f\", ($t1-$t0)/60}") min this run"
    grep -v '^\[' "$work/$model.tune.log" >&2 || true
  else
    tuned_note="tuning: none this run"
  fi
  db_path="$db"
}

# metatune with the library (oneDNN where it implements a kernel), tuned, and the faster of
# the two per kernel: one `metatune model bench` (built once each, timed in alternating
# rounds), its per-task profile kept next to the CSV.
metatune_bench() {
  local model="$1" dir="$2" db
  [[ "${bench_done:-}" == "$model" ]] && return 0
  database "$model" "$dir"
  db="$db_path"
  # Without a database (TRIALS=0 and none made before) only the library column runs.
  local policies=(library tuned best) dbargs=(--db "$db")
  if [[ ! -f "$db" ]]; then
    policies=(library)
    dbargs=()
    detail[metatune_tuned]="no tuning database ($db)"
    detail[metatune_best]="no tuning database ($db)"
  fi
  "$metatune" model bench --hf "$dir" --seq "$SEQ" --batch "$BATCH" --repeats "$REPEATS" \
    "${dbargs[@]}" --policies "$(IFS=,; echo "${policies[*]}")" --profile -q \
    --save-output "$work/$model.bench.json" \
    --save-outputs "$work/$model.bench" >"$work/$model.bench.txt"
  cat "$work/$model.bench.txt" >&2
  mkdir -p "$out"
  cp "$work/$model.bench.txt" "$out/model_profile_$model.txt"
  for p in "${policies[@]}"; do
    lat[metatune_$p]="$("$py" -c 'import json,sys; r={x["implementations"]: x for x in json.load(open(sys.argv[1]))}; print(round(r[sys.argv[2]]["latency_ms"], 2))' "$work/$model.bench.json" "$p")"
    detail[metatune_$p]="$("$py" -c 'import json,sys; r={x["implementations"]: x for x in json.load(open(sys.argv[1]))}; print(r[sys.argv[2]]["kernels"])' "$work/$model.bench.json" "$p"); $tuned_note"
    cmd[metatune_$p]="metatune model tune --hf $dir --seq $SEQ --trials $TRIALS --db $db; metatune model bench --hf $dir --seq $SEQ --db $db --repeats $REPEATS"
    ((${#dbargs[@]})) || cmd[metatune_$p]="metatune model bench --hf $dir --seq $SEQ --policies library --repeats $REPEATS"
    cp "$work/$model.bench/$p.npy" "$(npy metatune_$p)"
  done
  bench_done="$model"
}
column_metatune_library() { metatune_bench "$@"; }
# The library's matmuls against the weights in bf16 (`--fpmath bf16`: oneDNN on AMX or
# AVX512-BF16; elsewhere f32, said in the log); its output checked within TOL_BF16.
column_metatune_library_bf16() {
  local model="$1" dir="$2" c=metatune_library_bf16
  cmd[$c]="metatune model bench --hf $dir --seq $SEQ --batch $BATCH --policies library --fpmath bf16 --repeats $REPEATS"
  "$metatune" model bench --hf "$dir" --seq "$SEQ" --batch "$BATCH" --repeats "$REPEATS" \
    --policies library --fpmath bf16 -q --save-output "$work/$model.bf16.json" \
    --save-outputs "$work/$model.bf16" >"$work/$model.bf16.txt" 2>&1 ||
    { cat "$work/$model.bf16.txt" >&2; return 0; }
  lat[$c]="$("$py" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))[0]["latency_ms"], 2))' "$work/$model.bf16.json")"
  detail[$c]="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["kernels"])' "$work/$model.bf16.json"), fpmath bf16"
  cp "$work/$model.bf16/library.npy" "$(npy $c)"
}
column_metatune_tuned() { metatune_bench "$@"; }
column_metatune_best() { metatune_bench "$@"; }

# Every output written by a column against reference.py's float64 forward: within TOL, the
# *_bf16 columns' within TOL_BF16.
check_outputs() {
  local model="$1" dir="$2" c line tol
  local -a args
  for tol in "$TOL" "$TOL_BF16"; do
    args=()
    for c in $BENCH_COLUMNS; do
      if [[ ( "$c" == *_bf16 && "$tol" == "$TOL_BF16" ) || ( "$c" != *_bf16 && "$tol" == "$TOL" ) ]] &&
        [[ -f "$(npy "$c")" ]]; then
        args+=(--compare "$c=$(npy "$c")")
      fi
    done
    ((${#args[@]})) || continue
    while IFS= read -r line; do
      echo "$line" >>"$work/check.jsonl"
      c="$(field "$line" output)"
      check[$c]="$(field "$line" check)"
    done < <("$py" "$here/reference.py" --hf "$dir" --seq "$SEQ" --batch "$BATCH" --tol "$tol" \
      "${args[@]}" || true)
  done
}

field() { "$py" "$here/json_field.py" "$@"; }

csv_quote() { local s="${1//\"/\"\"}"; printf '"%s"' "$s"; }

record() {
  local model="$1" c
  mkdir -p "$out"
  if [[ ! -f "$csv" ]]; then
    echo "date,model,batch,seq,column,latency_ms,check,detail,command" >"$csv"
  fi
  for c in $BENCH_COLUMNS; do
    echo "$run_date,$model,$BATCH,$SEQ,$c,${lat[$c]:-},$(csv_quote "${check[$c]:-not checked}"),$(csv_quote "${detail[$c]:-}"),$(csv_quote "${cmd[$c]:-}")" >>"$csv"
  done
}

setup
printf '\n%-12s' model >"$work/table"
for c in $BENCH_COLUMNS; do printf '%28s' "$c (ms)" >>"$work/table"; done
failed=0
for model in $MODELS; do
  dir="$(checkpoint "$model")"
  lat=() detail=() cmd=() check=()
  for c in $BENCH_COLUMNS; do
    echo "bench/model: $model, $c" >&2
    "column_$c" "$model" "$dir"
  done
  check_outputs "$model" "$dir"
  record "$model"
  printf '\n%-12s' "$model" >>"$work/table"
  for c in $BENCH_COLUMNS; do
    printf '%28s' "${lat[$c]:-?} ${check[$c]:+[${check[$c]%% *}]}" >>"$work/table"
    [[ "${check[$c]:-ok}" == ok* ]] || failed=1
  done
done
cat "$work/table"
printf '\n\n(batch %s, sequence %s, median of %s runs; [ok] = output within %s x max|ref| of the float64 reference, *_bf16 within %s; rows appended to %s)\n' \
  "$BATCH" "$SEQ" "$REPEATS" "$TOL" "$TOL_BF16" "${csv#"$root"/}"
exit $failed
