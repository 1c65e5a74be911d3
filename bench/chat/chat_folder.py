#!/usr/bin/env python3
"""A chat folder for bench/chat: the checkpoint's config.json and model.safetensors (linked), a
word-level tokenizer (vocab.txt: WordPiece, whole words) over ids the model has, and a chat
template of Llama 3's shape whose markers are plain words. Prints TURNS user turns of WORDS
words each, one a line, drawn reproducibly from the vocabulary (what `model chat` reads).

  chat_folder.py --checkpoint DIR --out DIR [--turns 8] [--words 48] [--seed 0]
"""

import argparse
import json
import os
import random

TEMPLATE = ("{% for m in messages %}header {{ m.role }} endheader {{ m.content }} eot "
            "{% endfor %}{% if add_generation_prompt %}header assistant endheader{% endif %}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--words", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    with open(os.path.join(a.checkpoint, "config.json")) as f:
        vocab_size = json.load(f)["vocab_size"]
    os.makedirs(a.out, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        link = os.path.join(a.out, name)
        if not os.path.exists(link):
            os.symlink(os.path.abspath(os.path.join(a.checkpoint, name)), link)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    markers = ["header", "endheader", "eot", "user", "assistant", "system"]
    # Every id the model can generate is a word, so that a reply re-encodes to its own ids.
    words = [f"w{i}" for i in range(vocab_size - len(special) - len(markers))]
    with open(os.path.join(a.out, "vocab.txt"), "w") as f:
        f.write("\n".join(special + markers + words) + "\n")
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": TEMPLATE}, f)
    rng = random.Random(a.seed)
    for _ in range(a.turns):
        print(" ".join(rng.choice(words) for _ in range(a.words)))


if __name__ == "__main__":
    main()
