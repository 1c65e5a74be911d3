#!/usr/bin/env bash
# bench/tokenizers: metatune's tokenizers (core/tokenizer) against Hugging Face's tokenizers
# package on the same files. Trains a byte-level BPE (GPT-2's form, Llama 3's and Qwen2's) and
# a BERT WordPiece with the package on
# text found on this machine (train.py), writes a test text of real and generated lines
# (make_text.py), and compares the ids line by line, the decoded text, and for the byte-level
# BPE decode(encode(line)) == line (compare.py); and each line with the next as a pair (ids and
# type ids). The summary goes to bench/results/tokenizers.txt.
#
#   bash bench/tokenizers/run.sh
#   LINES=20000 SEED=1 bash bench/tokenizers/run.sh
#   BUILD=build-asan RETRAIN=1 bash bench/tokenizers/run.sh
#
# Exits 1 when any line differs on the main text. The lines with characters newer than the
# Unicode tables' version (make_text.py --new-unicode), and every code point through the
# normalizer and pre-tokenizer (probe_unicode.py), are compared too and reported apart.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
venv="${MT_BENCH_VENV:-$here/.venv}"
py="$venv/bin/python"
work="${WORK:-$build/bench_tokenizers}"
out="${OUT:-$root/bench/results}"
LINES="${LINES:-5000}"
SEED="${SEED:-0}"
BPE_VOCAB="${BPE_VOCAB:-8000}"
WORDPIECE_VOCAB="${WORDPIECE_VOCAB:-8000}"
run_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
command="LINES=$LINES SEED=$SEED BPE_VOCAB=$BPE_VOCAB WORDPIECE_VOCAB=$WORDPIECE_VOCAB bash bench/tokenizers/run.sh"

bash "$here/setup.sh"
if [[ ! -x "$metatune" ]]; then
  echo "bench/tokenizers: building metatune ($metatune is missing)"
  [[ -f "$build/CMakeCache.txt" ]] || cmake -S "$root" -B "$build" -G Ninja >/dev/null
  cmake --build "$build" --target metatune_cli
fi
mkdir -p "$work" "$out"
stamp="$work/trained-v5-$BPE_VOCAB-$WORDPIECE_VOCAB"
if [[ -n "${RETRAIN:-}" || ! -f "$stamp" ]]; then
  "$py" "$here/train.py" --out "$work" --bpe-vocab "$BPE_VOCAB" \
    --wordpiece-vocab "$WORDPIECE_VOCAB" | tee "$stamp"
fi
"$py" "$here/make_text.py" --corpus "$work/corpus.txt" --out "$work/text.txt" --lines "$LINES" \
  --seed "$SEED"
"$py" "$here/make_text.py" --corpus "$work/corpus.txt" --out "$work/newer.txt" --new-unicode

log="$work/compare.log"
: >"$log"
failed=0
compare() { # NAME TEXT ARGS...: one comparison, its output kept in the log
  local name="$1" text="$2"
  shift 2
  if ! "$py" "$here/compare.py" --metatune "$metatune" --text "$text" --name "$name" "$@" \
    >>"$log" 2>&1; then
    [[ "$text" == "$work/text.txt" ]] && failed=1
  fi
}
for text in "$work/text.txt" "$work/newer.txt"; do
  compare "byte-level BPE (tokenizer.json)" "$text" --tokenizer "$work/bpe" --round-trip
  compare "byte-level BPE, add_prefix_space" "$text" --tokenizer "$work/bpe-prefix"
  compare "byte-level BPE, Llama 3 form (Split, ignore_merges)" "$text" \
    --tokenizer "$work/llama3" --round-trip
  compare "byte-level BPE, Qwen2 form (NFC, Split)" "$text" --tokenizer "$work/qwen2"
  compare "byte-level BPE, SmolLM form (Digits, ByteLevel)" "$text" --tokenizer "$work/digits" \
    --round-trip
  compare "SentencePiece BPE, Llama 2 form (Prepend, Replace; byte fallback)" "$text" \
    --tokenizer "$work/sp-legacy"
  compare "SentencePiece BPE, Metaspace form (prepend first)" "$text" \
    --tokenizer "$work/sp-metaspace"
  compare "SentencePiece BPE, Gemma form (Replace, Split)" "$text" --tokenizer "$work/sp-gemma"
  compare "SentencePiece BPE, Llama 2 form, <s> ..." "$text" --tokenizer "$work/sp-legacy" \
    --add-special-tokens
  compare "WordPiece (vocab.txt)" "$text" --tokenizer "$work/wordpiece" --vocab-txt
  compare "WordPiece (vocab.txt), [CLS] ... [SEP]" "$text" --tokenizer "$work/wordpiece" \
    --vocab-txt --add-special-tokens
  compare "WordPiece (tokenizer.json)" "$text" --tokenizer "$work/wordpiece-json"
  compare "WordPiece (vocab.txt), pairs [CLS] A [SEP] B [SEP]" "$text" \
    --tokenizer "$work/wordpiece" --vocab-txt --add-special-tokens --pairs
  compare "WordPiece (tokenizer.json), pairs with special tokens" "$text" \
    --tokenizer "$work/wordpiece-json" --add-special-tokens --pairs
  compare "byte-level BPE (tokenizer.json), pairs" "$text" --tokenizer "$work/bpe" \
    --add-special-tokens --pairs
  if [[ "$text" == "$work/text.txt" ]]; then echo "--- characters newer than Unicode $(
    "$py" -c 'import unicodedata; print(unicodedata.unidata_version)'):" >>"$log"; fi
done

# Every code point through the normalizers and pre-tokenizers (what the vocabulary cannot show).
"$py" "$here/probe_unicode.py" --metatune "$metatune" --work "$work" --bpe "$work/bpe" \
  --wordpiece "$work/wordpiece-json" --llama3 "$work/llama3" --qwen2 "$work/qwen2" \
  --sentence-piece "$work/sp-legacy" --digits "$work/digits" \
  --show "${SHOW:-3}" >>"$log" 2>&1 || true

{
  echo "# bench/tokenizers: metatune tokenize vs Hugging Face tokenizers, $run_date"
  echo "# command: $command"
  echo "# tokenizers $("$py" -c 'import tokenizers; print(tokenizers.__version__)');" \
    "metatune's Unicode tables: $(grep -o 'Unicode [0-9.]*' "$root/core/tokenizer/unicode_tables.cpp" | head -1)"
  echo "# trained: $(cat "$stamp")"
  echo "# text: $LINES lines (half real lines of the corpus, half generated; seed $SEED)," \
    "then $(wc -l <"$work/newer.txt") lines with newer characters: $(paste -sd';' "$work/newer.txt.what")"
  cat "$log"
} >"$out/tokenizers.txt"
cat "$out/tokenizers.txt"
exit $failed
