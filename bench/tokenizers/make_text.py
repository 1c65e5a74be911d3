"""Writes the test text bench/tokenizers encodes with both implementations: real lines from the
training corpus (as they are: indentation, tabs, trailing spaces) and generated lines mixing
scripts (Latin with accents, Greek, Cyrillic, CJK, kana, Hangul, Arabic, Hebrew, Devanagari,
Thai), emoji (ZWJ sequences, skin tones, flags), combining marks in every order, numbers of all
kinds, contractions, the special tokens inside and next to words, control and format
characters, and whitespace edge cases (tabs, runs of spaces, leading and trailing spaces,
empty lines, \\r, vertical tab, form feed, NBSP and the other Unicode spaces).

    python make_text.py --corpus DIR/corpus.txt --out text.txt [--lines 5000] [--seed 0]

Lines are separated by "\\n" alone (a "\\r" is part of its line). Every character is assigned
in Unicode 14 or earlier; --new-unicode writes instead a few lines with characters that are
newer, to show what the tables' Unicode version changes.
"""
import argparse
import random

LATIN = ["café", "naïve", "façade", "Ærøskøbing", "São", "Paulo", "Zürich", "Łódź", "İstanbul",
         "straße", "ÉCOLE", "Ångström", "coöperate", "jalapeño", "Dvořák", "Ðorđe", "ǅemal",
         "ﬁnance", "Œuvre", "résumé", "Mañana", "crème", "brûlée", "ÀÉÎÕÜ", "ẞig"]
GREEK = ["Ελληνικά", "γλώσσα", "ΣΑΣ", "Οδυσσεύς", "ἀρχή", "φιλοσοφία", "ΑΘΗΝΑ", "ς", "ϊΐ"]
CYRILLIC = ["Русский", "текст", "ЁЛКА", "Українська", "мова", "Ђорђе", "Қазақ", "съешь"]
CJK = ["中文字符测试", "漢字", "東京", "日本語のテキスト", "カタカナ", "ひらがな", "한국어", "텍스트",
       "𠀋", "𪚲", "㐀", "豈", "丽"]
ARABIC = ["العربية", "مرحبا", "بالعالم", "٣٤٥", "كِتَابٌ", "ﻻ"]
HEBREW = ["עברית", "שָׁלוֹם"]
INDIC = ["हिन्दी", "नमस्ते", "தமிழ்", "ไทย", "ภาษา", "ক্ষ"]
EMOJI = ["😀", "🎉", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🏳️‍🌈", "🤖", "☕", "1️⃣", "🧑🏿‍💻", "🥰"]
COMBINING = ["e\u0301", "a\u0308\u0323", "a\u0323\u0308", "o\u0302\u0303", "n\u0303",
             "Z\u0351\u036b\u0343\u036a\u0302", "i\u0307", "\u0301alone", "u\u031b\u0309",
             "\u1e9b\u0323", "q\u0307\u0323"]
NUMBERS = ["12345", "3.14159", "1,000,000", "²³", "½", "Ⅻ", "①②", "٣٤", "१२३", "𝟙𝟚", "0x1F"]
SYMBOLS = ["$", "€100", "£", "¥", "%", "&&", "||", "->", "=>", "<=", "~", "^", "`", "@user",
           "#tag", "a+b", "x*y", "(paren)", "[bracket]", "{brace}", "«guillemets»", "“quotes”",
           "‘single’", "—", "–", "…", "•", "©", "®", "™", "°", "±", "∑", "√", "∞", "≠", "§",
           "¶", "¿Qué?", "¡Hola!", "。", "、", "「」", "！", "？", "・"]
CONTRACTIONS = ["it's", "we're", "they've", "I'm", "he'll", "she'd", "don't", "can't",
                "IT'S", "We'Re", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'x", "''", "o'clock",
                "rock'n'roll", "’s"]
SPECIALS = ["<|endoftext|>", "[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "<|endoftext|>x",
            "x<|endoftext|>", "[cls]", "<|endoftext", "[MASK][MASK]"]
ODD = ["\u00a0", "\u2000", "\u2003", "\u3000", "\u200b", "\ufeff", "\u00ad", "\u0007",
       "\u001c", "\u001f", "\u0085", "\u2028", "\u2029", "\ue000", "\ufffd", "\u0000",
       "\u200d", "\u200c", "\u2060", "\u180e", "\u061c", "\uff21\uff42", "𝐀𝐁", "\U000f0000",
       "\u0378", "\u00b5", "\u212b", "\u2126", "\u1e9e", "\u0130", "\u03a3"]
ASCII_WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello",
               "World", "tokenizer", "BPE", "WordPiece", "unbelievable", "antidisestablishment",
               "x", "I", "a", "HTTP", "foo_bar", "camelCase", "snake_case", "CONSTANT"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", " \t ", "\r", "\r ", "\x0b", "\x0c", "    ", "\u00a0 "]
ALL_POOLS = [LATIN, GREEK, CYRILLIC, CJK, ARABIC, HEBREW, INDIC, EMOJI, COMBINING, NUMBERS,
             SYMBOLS, CONTRACTIONS, SPECIALS, ODD, ASCII_WORDS]

# Assigned after Unicode 14 (the tables' version with Python 3.11), for --new-unicode.
NEWER = [("U+1FAE8 (So, Unicode 15.0)", "shaking \U0001fae8 face"),
         ("U+31350 (Lo, CJK extension H, Unicode 15.0)", "cjk \U00031350\U00031351 ext"),
         ("U+11F00 (Mn, Kawi, Unicode 15.0)", "kawi a\U00011f00b"),
         ("U+11F43 (Po, Kawi, Unicode 15.0)", "kawi\U00011f43punct"),
         ("U+1E030 (Lm, Cyrillic modifier, Unicode 15.0)", "mod\U0001e030ifier"),
         ("U+10EFD (Mn, Arabic, Unicode 15.0)", "arabic\U00010efdmark"),
         ("U+2B739 (Lo, CJK extension B+, Unicode 15.0)", "\U0002b739"),
         ("U+1FAE9 (So, Unicode 16.0)", "face \U0001fae9 with bags"),
         ("U+0897 (Mn, Arabic, Unicode 16.0)", "x\u0897y")]


def generated_line(rng):
    kind = rng.random()
    if kind < 0.08:  # whitespace only, or nothing
        return rng.choice(["", " ", "  ", "\t", " \t", "  \r", "\r", "\x0c", "\u3000", "   "])
    words = []
    for _ in range(rng.randint(1, 14)):
        pool = rng.choice(ALL_POOLS)
        word = rng.choice(pool)
        if rng.random() < 0.15:  # glued to its neighbour
            word += rng.choice(rng.choice(ALL_POOLS))
        words.append(word)
    line = ""
    for i, w in enumerate(words):
        line += (rng.choice(SPACES) if rng.random() < 0.3 else " ") if i else ""
        line += w
    if rng.random() < 0.2:
        line = rng.choice(SPACES) + line
    if rng.random() < 0.2:
        line += rng.choice(SPACES + ["  ", " \t", "\r"])
    if rng.random() < 0.02:  # a long word: WordPiece's max_input_chars_per_word is 100
        line += " " + "".join(rng.choice("abcdefghij") for _ in range(rng.choice([99, 100, 101, 150])))
    return line


def corpus_lines(corpus_list, rng, count):
    lines = []
    for path in open(corpus_list, encoding="utf-8").read().split("\n"):
        if not path:
            continue
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().split("\n"))
    return rng.sample(lines, min(count, len(lines)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, help="the corpus.txt train.py wrote")
    p.add_argument("--out", required=True)
    p.add_argument("--lines", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--new-unicode", action="store_true")
    args = p.parse_args()
    if args.new_unicode:
        with open(args.out, "w", encoding="utf-8", newline="") as f:
            for what, line in NEWER:
                f.write(line + "\n")
        with open(args.out + ".what", "w", encoding="utf-8") as f:
            f.write("\n".join(what for what, _ in NEWER) + "\n")
        return
    rng = random.Random(args.seed)
    real = corpus_lines(args.corpus, rng, args.lines // 2)
    made = [generated_line(rng) for _ in range(args.lines - len(real))]
    lines = real + made
    rng.shuffle(lines)
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        for line in lines:
            assert "\n" not in line
            f.write(line + "\n")


if __name__ == "__main__":
    main()
