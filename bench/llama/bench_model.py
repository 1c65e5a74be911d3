"""bench/model's Python helpers, as bench/llama uses them (the Graph builder of onnx_graphs.py,
the random-weight Writer of make_checkpoint.py, compare() and softmax() of reference.py, the
token helpers of hf_folder.py).

bench/llama has its own make_checkpoint.py and reference.py, so bench/model's files of those
names are loaded here from their paths under other module names instead of by `import`.
"""

import importlib.util
import os
import sys

MODEL_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                          "model"))
# After bench/llama, so that bench/model's own imports (hf_folder, ...) resolve and ours win.
if MODEL_DIR not in sys.path:
    sys.path.append(MODEL_DIR)


def _load(name):
    alias = "bench_model_" + name
    if alias not in sys.modules:
        spec = importlib.util.spec_from_file_location(alias, os.path.join(MODEL_DIR, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[alias] = module
        spec.loader.exec_module(module)
    return sys.modules[alias]


import hf_folder  # noqa: E402  (no name shared with bench/llama)
import onnx_graphs  # noqa: E402

Graph = onnx_graphs.Graph
MS = onnx_graphs.MS
default_tokens = hf_folder.default_tokens
parse_tokens = hf_folder.parse_tokens
Writer = _load("make_checkpoint").Writer
compare = _load("reference").compare
softmax = _load("reference").softmax
