"""Encodes every line of a text with Hugging Face's tokenizers and with `metatune tokenize`, and
counts the lines whose ids differ (printing the first ones); then decodes metatune's ids with
`metatune tokenize --decode` and counts the lines whose text differs from the package's decode
of the same ids, and, with --round-trip, the lines that decoding with the special tokens kept
does not give back.

    python compare.py --metatune BIN --tokenizer DIR --text FILE [--vocab-txt]
                      [--add-special-tokens] [--round-trip] [--pairs] [--name NAME] [--show 5]

--pairs: each line is encoded as a pair with the next line (the last with the first), ids and
type ids compared (`metatune tokenize --pair-file`, the package's encode(a, b)); no decoding.

--vocab-txt: the package side is BertWordPieceTokenizer(DIR/vocab.txt, lowercase=True), the
metatune side the folder DIR (which holds only vocab.txt); otherwise both read
DIR/tokenizer.json. Prints one summary line starting with NAME and exits 1 on any difference.
"""
import argparse
import json
import os
import subprocess
import sys

from tokenizers import BertWordPieceTokenizer, Tokenizer


def run(args):
    out = subprocess.run(args, capture_output=True)
    if out.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{out.stderr.decode(errors='replace')}")
    return out.stdout.decode("utf-8").split("\n")[:-1]


def show(i, line, what, ref, ours, tok):
    print(f"  line {i + 1}: {line!r}")
    if what == "ids":
        print(f"    tokenizers: {ref} {[tok.id_to_token(x) for x in ref]}")
        print(f"    metatune:   {ours} {[tok.id_to_token(x) for x in ours]}")
    else:
        print(f"    expected: {ref!r}")
        print(f"    metatune: {ours!r}")


def compare_pairs(a, tok, lines, command):
    seconds = lines[1:] + lines[:1]
    pair_file = a.text + ".pairs"
    with open(pair_file, "w", encoding="utf-8", newline="") as f:
        f.write("".join(x + "\n" for x in seconds))
    refs = tok.encode_batch(list(zip(lines, seconds)), add_special_tokens=a.add_special_tokens)
    ours = [json.loads(x) for x in run(command + ["--file", a.text, "--pair-file", pair_file])]
    if len(ours) != len(lines):
        sys.exit(f"metatune printed {len(ours)} lines for {len(lines)} pairs")
    diff = [i for i in range(len(lines))
            if ours[i]["ids"] != refs[i].ids or ours[i]["type_ids"] != refs[i].type_ids]
    for i in diff[:a.show]:
        print(f"  pair {i + 1}: {lines[i]!r} + {seconds[i]!r}")
        print(f"    tokenizers: {refs[i].ids} types {refs[i].type_ids}")
        print(f"    metatune:   {ours[i]['ids']} types {ours[i]['type_ids']}")
    print(f"{a.name}: {len(lines)} pairs compared, ids or type ids differ on {len(diff)}")
    return 1 if diff else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--metatune", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--text", required=True)
    p.add_argument("--vocab-txt", action="store_true")
    p.add_argument("--add-special-tokens", action="store_true")
    p.add_argument("--round-trip", action="store_true")
    p.add_argument("--pairs", action="store_true")
    p.add_argument("--name", default="")
    p.add_argument("--show", type=int, default=5)
    a = p.parse_args()

    with open(a.text, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")[:-1]
    if a.vocab_txt:
        tok = BertWordPieceTokenizer(os.path.join(a.tokenizer, "vocab.txt"), lowercase=True)
    else:
        tok = Tokenizer.from_file(os.path.join(a.tokenizer, "tokenizer.json"))
    special = ["--add-special-tokens"] if a.add_special_tokens else []
    base = [a.metatune, "tokenize", "--tokenizer", a.tokenizer, "--json"]
    if a.pairs:
        return compare_pairs(a, tok, lines, base + special)
    ref = [e.ids for e in tok.encode_batch(lines, add_special_tokens=a.add_special_tokens)]

    ours = [json.loads(x) for x in run(base + ["--file", a.text] + special)]
    if len(ours) != len(lines):
        sys.exit(f"metatune printed {len(ours)} lines for {len(lines)}")
    id_diff = [i for i in range(len(lines)) if ours[i] != ref[i]]
    for i in id_diff[:a.show]:
        show(i, lines[i], "ids", ref[i], ours[i], tok)

    ids_file = a.text + ".ids"
    with open(ids_file, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in ours))
    decoded = [json.loads(x) for x in run(base + ["--decode", "--file", ids_file])]
    expected = tok.decode_batch(ours)
    decode_diff = [i for i in range(len(lines)) if decoded[i] != expected[i]]
    for i in decode_diff[:a.show]:
        show(i, lines[i], "decode", expected[i], decoded[i], tok)
    summary = (f"{a.name}: {len(lines)} lines compared, ids differ on {len(id_diff)}, "
               f"decode differs from the package's on {len(decode_diff)}")
    bad = id_diff or decode_diff
    if a.round_trip:
        # The special tokens kept (skip_special_tokens=False), so that the text is all there.
        kept = [json.loads(x) for x in run(base + ["--decode", "--keep-special-tokens", "--file",
                                                   ids_file])]
        trip_diff = [i for i in range(len(lines)) if kept[i] != lines[i]]
        for i in trip_diff[:a.show]:
            show(i, lines[i], "round trip", lines[i], kept[i], tok)
        summary += f", decode(encode(line)) != line on {len(trip_diff)}"
        bad = bad or trip_diff
    print(summary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
