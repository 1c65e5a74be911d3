"""Trains the tokenizers bench/tokenizers compares, with Hugging Face's tokenizers, on text
found on this machine (the licenses in /usr/share/common-licenses, Debian's copyright files,
Python's own sources and text files): a GPT-2 style byte-level BPE (tokenizer.json, with
<|endoftext|> as a special token), a lowercasing BERT WordPiece (vocab.txt, and its
tokenizer.json), byte-level BPEs in the form Llama 3 and Qwen2 write (a Split pre-tokenizer
with their pattern before ByteLevel; Qwen2's with the NFC normalizer; Llama 3's with
ignore_merges), and a BPE over SentencePiece pieces with byte fallback in the two forms of
Llama 2's and Mistral's tokenizer.json.

    python train.py --out DIR [--bpe-vocab 8000] [--wordpiece-vocab 8000]

Writes DIR/bpe/tokenizer.json, DIR/bpe-prefix/tokenizer.json (the same with
add_prefix_space), DIR/wordpiece/vocab.txt (a folder with only vocab.txt, read as
BertWordPieceTokenizer reads it), DIR/wordpiece-json/tokenizer.json, DIR/llama3/tokenizer.json,
DIR/qwen2/tokenizer.json, DIR/digits/tokenizer.json (SmolLM's form), DIR/sp-legacy/tokenizer.json,
DIR/sp-metaspace/tokenizer.json and
DIR/corpus.txt (the files used, one a line).
"""
import argparse
import glob
import json
import os
import sys

from tokenizers import (BertWordPieceTokenizer, ByteLevelBPETokenizer, Regex, Tokenizer, decoders,
                        models, normalizers, pre_tokenizers, trainers)

CORPUS_LIMIT_BYTES = 12_000_000

# The Split patterns of Llama 3's and Qwen2's tokenizer.json (Qwen2: one number a piece).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")


def trained_byte_level(files, vocab_size, pre_tokenizer, nfc=False, ignore_merges=False):
    """A byte-level BPE (ByteLevel decoder, <|endoftext|> special) with the given
    pre-tokenizer, trained on `files`."""
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train(files, trainer)
    return tok


def split_bpe(files, vocab_size, pattern, nfc, ignore_merges):
    """A byte-level BPE as Llama 3 (nfc False, ignore_merges True) and Qwen2 (nfc True) write
    theirs: Sequence [Split(pattern, Isolated), ByteLevel(use_regex False)]."""
    return trained_byte_level(files, vocab_size, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)]),
        nfc, ignore_merges)


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


def digits_bpe(files, vocab_size):
    """A byte-level BPE as SmolLM and StarCoder write theirs: Sequence [Digits(individual),
    ByteLevel(use_regex True)]."""
    return trained_byte_level(files, vocab_size, pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)]))


def sentence_piece_bpes(files, vocab_size):
    """A BPE over SentencePiece pieces (spaces as U+2581) with byte fallback, in the two forms
    transformers converts Llama 2's, Mistral's and TinyLlama's tokenizers to: the older one
    (normalizers Prepend + Replace, no pre-tokenizer, decoders Replace, ByteFallback, Fuse,
    Strip) and the newer one (the Metaspace pre-tokenizer and decoder, prepend_scheme "first").
    Trained with words cut at the spaces; the 256 byte tokens <0xXX> added to the vocabulary
    after the trained ones (Llama 2 has them first)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                           normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                 split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - 256,
                                  special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train(files, trainer)
    doc = json.loads(tok.to_str())
    vocab = doc["model"]["vocab"]
    for b in range(256):
        name = f"<0x{b:02X}>"
        if name not in vocab:
            vocab[name] = max(vocab.values()) + 1
    doc["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<s>", "type_id": 1}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [vocab["<s>"]], "tokens": ["<s>"]}}}
    older = dict(doc)
    older["pre_tokenizer"] = None
    older["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    newer = dict(doc)
    newer["normalizer"] = None
    newer["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                              "prepend_scheme": "first", "split": False}
    newer["decoder"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                        "split": False}
    # Gemma's form (transformers' GemmaConverter): normalizer Replace(" ", "▁") without a
    # Prepend, pre-tokenizer Split(" ", merged_with_previous), decoders Replace, ByteFallback,
    # Fuse (no Strip), <bos>-style template as the others.
    gemma = dict(doc)
    gemma["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    gemma["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "},
                              "behavior": "MergedWithPrevious", "invert": False}
    gemma["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    # All must load in the package.
    for d in (older, newer, gemma):
        Tokenizer.from_str(json.dumps(d))
    return older, newer, gemma


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
    for name, pattern, nfc, ignore_merges in (("llama3", LLAMA3_PATTERN, False, True),
                                              ("qwen2", QWEN2_PATTERN, True, False)):
        tok = split_bpe(files, args.bpe_vocab, pattern, nfc, ignore_merges)
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        tok.save(os.path.join(args.out, name, "tokenizer.json"))
    os.makedirs(os.path.join(args.out, "digits"), exist_ok=True)
    digits_bpe(files, args.bpe_vocab).save(os.path.join(args.out, "digits", "tokenizer.json"))
    for name, doc in zip(("sp-legacy", "sp-metaspace", "sp-gemma"),
                         sentence_piece_bpes(files, args.bpe_vocab)):
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        with open(os.path.join(args.out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
    total = sum(os.path.getsize(f) for f in files)
    print(f"trained on {len(files)} files ({total / 1e6:.1f} MB): byte-level BPE "
          f"{bpe.get_vocab_size()} tokens, WordPiece {wp.get_vocab_size()} tokens, Llama 3 and Qwen2 "
          f"forms and SentencePiece BPEs {args.bpe_vocab} tokens each")


if __name__ == "__main__":
    main()
