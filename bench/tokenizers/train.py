"""Trains the two tokenizers bench/tokenizers compares, with Hugging Face's tokenizers, on text
found on this machine (the licenses in /usr/share/common-licenses, Debian's copyright files,
Python's own sources and text files): a GPT-2 style byte-level BPE (tokenizer.json, with
<|endoftext|> as a special token) and a lowercasing BERT WordPiece (vocab.txt, and its
tokenizer.json).

    python train.py --out DIR [--bpe-vocab 8000] [--wordpiece-vocab 8000]

Writes DIR/bpe/tokenizer.json, DIR/bpe-prefix/tokenizer.json (the same with
add_prefix_space), DIR/wordpiece/vocab.txt (a folder with only vocab.txt, read as
BertWordPieceTokenizer reads it), DIR/wordpiece-json/tokenizer.json and DIR/corpus.txt (the
files used, one a line).
"""
import argparse
import glob
import json
import os
import sys

from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer

CORPUS_LIMIT_BYTES = 12_000_000


def corpus_files():
    patterns = [
        "/usr/share/common-licenses/*",
        "/usr/share/doc/*/copyright",
        "/usr/share/doc/**/*.txt",
        f"/usr/lib/python3.{sys.version_info.minor}/*.py",
        "/usr/lib/python3*/**/*.txt",
    ]
    files, total = [], 0
    for pattern in patterns:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    size = len(f.read())
            except (UnicodeDecodeError, OSError):
                continue
            if total + size > CORPUS_LIMIT_BYTES:
                return files
            files.append(path)
            total += size
    return files


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--bpe-vocab", type=int, default=8000)
    p.add_argument("--wordpiece-vocab", type=int, default=8000)
    args = p.parse_args()
    files = corpus_files()
    if not files:
        sys.exit("bench/tokenizers: no corpus found")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus.txt"), "w") as f:
        f.write("\n".join(files) + "\n")

    bpe = ByteLevelBPETokenizer()
    bpe.train(files, vocab_size=args.bpe_vocab, special_tokens=["<|endoftext|>"],
              show_progress=False)
    os.makedirs(os.path.join(args.out, "bpe"), exist_ok=True)
    bpe.save(os.path.join(args.out, "bpe", "tokenizer.json"))
    # The same vocabulary with add_prefix_space (as RoBERTa-style tokenizers are saved).
    with open(os.path.join(args.out, "bpe", "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    doc["pre_tokenizer"]["add_prefix_space"] = True
    os.makedirs(os.path.join(args.out, "bpe-prefix"), exist_ok=True)
    with open(os.path.join(args.out, "bpe-prefix", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train(files, vocab_size=args.wordpiece_vocab, show_progress=False)
    os.makedirs(os.path.join(args.out, "wordpiece"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "wordpiece-json"), exist_ok=True)
    wp.save_model(os.path.join(args.out, "wordpiece"))
    wp.save(os.path.join(args.out, "wordpiece-json", "tokenizer.json"))
    total = sum(os.path.getsize(f) for f in files)
    print(f"trained on {len(files)} files ({total / 1e6:.1f} MB): byte-level BPE "
          f"{bpe.get_vocab_size()} tokens, WordPiece {wp.get_vocab_size()} tokens")


if __name__ == "__main__":
    main()
