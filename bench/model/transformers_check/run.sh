#!/usr/bin/env bash
# metatune's Hugging Face loader against transformers on small random-weight decoders (Llama
# with GQA; Llama with llama3 rope scaling and attention/mlp biases; Qwen2 tied; Mistral with a
# sliding window of 8 and a 24-token prompt): per model the max abs logit difference of
# `metatune model run --hf` (library and untuned kernels) against transformers' float64
# forward, and the greedy tokens of `metatune model generate` against transformers' generate().
# Exits nonzero on a difference beyond 1e-3 x max|logit| (TOL), a loader error or differing
# greedy tokens. Then the text check (llama2_sp_text, llama3_bpe_text, qwen2_bpe_text): a
# tokenizer of Llama 2's (SentencePiece BPE, byte fallback), Llama 3's or Qwen2's form trained
# with the tokenizers package beside each model; prompts as text through transformers and
# through `metatune tokenize` / `metatune model generate --prompt`: prompt ids, greedy tokens,
# and the generated text (transformers' decode vs what metatune printed and its --decode).
#
#   bash bench/model/transformers_check/run.sh
#   KEEP=/tmp/tc bash bench/model/transformers_check/run.sh     # keep the folders and outputs
#
# Variables: METATUNE (default build/bin/metatune), TOL (1e-3), SEED (0), NEW_TOKENS (8),
# MODELS (comma-separated; check.py --help), IMPLEMENTATIONS (library,untuned), KEEP, JSON.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${MT_TC_VENV:-$here/.venv}"
metatune="${METATUNE:-$root/build/bin/metatune}"
if [[ ! -x "$metatune" ]]; then
  echo "transformers_check: $metatune is missing (build metatune first: cmake --build build)" >&2
  exit 2
fi
bash "$here/setup.sh"
args=(--metatune "$metatune" --tol "${TOL:-1e-3}" --seed "${SEED:-0}"
      --new-tokens "${NEW_TOKENS:-8}" --implementations "${IMPLEMENTATIONS:-library,untuned}")
[[ -n "${MODELS:-}" ]] && args+=(--models "$MODELS")
[[ -n "${KEEP:-}" ]] && args+=(--keep "$KEEP")
[[ -n "${JSON:-}" ]] && args+=(--json "$JSON")
# transformers' progress bars and load reports are not part of the result.
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error
exec "$venv/bin/python" "$here/check.py" "${args[@]}"
