"""Every Unicode code point through both implementations' text handling: for each one (but the
surrogates and the newline) a line that puts it between letters, between digits, alone and
doubled, then what the model would be given -- the byte-level BPE's GPT-2 pieces, those of
Llama 3's and Qwen2's split (Qwen2's after NFC), and WordPiece's normalized words -- from the package (normalizer.normalize_str,
pre_tokenizer.pre_tokenize_str) and from `metatune tokenize --pieces`. This tests the Unicode
tables (categories, whitespace, lowercase, NFD) on all of Unicode, including what the
vocabulary cannot show: characters it does not have become the same byte tokens or [UNK]
either way. Prints the code points that differ with their category in this Python's Unicode.

    python probe_unicode.py --metatune BIN --work DIR --bpe DIR --wordpiece DIR [--show 20]
"""
import argparse
import json
import os
import subprocess
import sys
import unicodedata

from tokenizers import Tokenizer


def probe_line(c):
    return f"a{c}b 1{c}2 {c} {c}{c}."


def ours(metatune, tokenizer, path):
    out = subprocess.run([metatune, "tokenize", "--tokenizer", tokenizer, "--pieces", "--file",
                          path], capture_output=True)
    if out.returncode:
        sys.exit(out.stderr.decode(errors="replace"))
    return [json.loads(x) for x in out.stdout.decode("utf-8").split("\n")[:-1]]


def describe(cp):
    c = chr(cp)
    return f"U+{cp:04X} {unicodedata.category(c)} {unicodedata.name(c, '(unnamed)')}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--metatune", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--bpe", required=True, help="folder with a byte-level BPE tokenizer.json")
    p.add_argument("--wordpiece", required=True, help="folder with a WordPiece tokenizer.json")
    p.add_argument("--llama3", help="folder with a tokenizer.json of Llama 3's form")
    p.add_argument("--qwen2", help="folder with a tokenizer.json of Qwen2's form (NFC)")
    p.add_argument("--sentence-piece", help="folder with a SentencePiece BPE's tokenizer.json")
    p.add_argument("--digits", help="folder with a tokenizer.json of SmolLM's form (Digits)")
    p.add_argument("--show", type=int, default=20)
    a = p.parse_args()

    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp != 0x0A]
    lines = [probe_line(chr(cp)) for cp in code_points]
    path = os.path.join(a.work, "probe_unicode.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(line + "\n" for line in lines))

    failed = 0
    folders = [("byte-level BPE", a.bpe), ("WordPiece", a.wordpiece)]
    folders += [(n, f) for n, f in (("Llama 3 form", a.llama3), ("Qwen2 form", a.qwen2),
                                    ("SentencePiece BPE", a.sentence_piece),
                                    ("SmolLM form", a.digits)) if f]
    for name, folder in folders:
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        normalize = tok.normalizer.normalize_str if tok.normalizer else (lambda x: x)
        if tok.pre_tokenizer is None:  # the normalized line is the one piece
            ref = [[normalize(line)] if normalize(line) else [] for line in lines]
        else:
            ref = [[w for w, _ in tok.pre_tokenizer.pre_tokenize_str(normalize(line))]
                   for line in lines]
        got = ours(a.metatune, folder, path)
        if len(got) != len(lines):
            sys.exit(f"metatune printed {len(got)} lines for {len(lines)}")
        diff = [i for i in range(len(lines)) if ref[i] != got[i]]
        print(f"every code point, {name} pieces: {len(lines)} code points compared, "
              f"{len(diff)} differ")
        by_category = {}
        for i in diff:
            by_category.setdefault(unicodedata.category(chr(code_points[i])), []).append(i)
        for category, items in sorted(by_category.items()):
            print(f"  {category}: {len(items)}")
        for i in diff[:a.show]:
            print(f"  {describe(code_points[i])}: {lines[i]!r}")
            print(f"    tokenizers: {ref[i]}")
            print(f"    metatune:   {got[i]}")
        failed |= bool(diff)
    return failed


if __name__ == "__main__":
    sys.exit(main())
