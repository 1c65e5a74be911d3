#!/usr/bin/env python3
"""Writes core/tokenizer/unicode_tables.cpp: the Unicode character data the tokenizers need
(general category, lowercase mapping, canonical decomposition and composition, canonical
combining class, White_Space), taken from this Python's unicodedata, so that metatune needs no
ICU.

    python3 scripts/gen_unicode_tables.py            # rewrites core/tokenizer/unicode_tables.cpp
    python3 scripts/gen_unicode_tables.py --check    # exit 1 if the committed file differs,
                                                     # 77 if this Python's Unicode is another

The tables follow what Hugging Face's tokenizers crate asks of Rust's char methods:
  * lowercase: the full mapping of one character on its own (str.lower() of one character,
    Rust's char::to_lowercase: U+0130 becomes two characters; no final-sigma context);
  * canonical decomposition: the full recursive NFD of one character (Hangul syllables are
    left to the algorithm in unicode_normalize.cpp), with the combining classes for reordering;
  * canonical composition (NFC): the primary composites, the characters whose one-step
    canonical decomposition is two characters and that NFC keeps (not excluded from
    composition), as (first, second) -> composite; Hangul again by the algorithm;
  * White_Space: Rust's char::is_whitespace. Python's str.isspace() also counts U+001C..U+001F
    (bidirectional class B/S), which White_Space does not: those four are left out here.
"""
import argparse
import pathlib
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "core" / "tokenizer" / "unicode_tables.cpp"

# The order of mt::tok::GeneralCategory in unicode_tables.h.
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd",
              "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc",
              "Cf", "Cs", "Co", "Cn"]
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
MAX_CODE_POINT = 0x10FFFF


def is_surrogate(cp):
    return 0xD800 <= cp <= 0xDFFF


def category_runs():
    runs, previous = [], None
    for cp in range(MAX_CODE_POINT + 1):
        category = unicodedata.category(chr(cp))
        if category != previous:
            runs.append((cp, CATEGORIES.index(category)))
            previous = category
    return runs


def lowercase_tables():
    single, multiple = [], []
    for cp in range(MAX_CODE_POINT + 1):
        if is_surrogate(cp):
            continue
        lower = chr(cp).lower()
        if lower == chr(cp):
            continue
        if len(lower) == 1:
            single.append((cp, ord(lower)))
        else:
            multiple.append((cp, [ord(c) for c in lower]))
    return single, multiple


def decomposition_table():
    entries = []
    for cp in range(MAX_CODE_POINT + 1):
        if is_surrogate(cp) or HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        nfd = unicodedata.normalize("NFD", chr(cp))
        if nfd != chr(cp):
            entries.append((cp, [ord(c) for c in nfd]))
    return entries


def composition_table():
    entries = []
    for cp in range(MAX_CODE_POINT + 1):
        if is_surrogate(cp) or HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        mapping = unicodedata.decomposition(chr(cp))
        if not mapping or mapping.startswith("<"):
            continue
        parts = [int(x, 16) for x in mapping.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            entries.append((parts[0], parts[1], cp))
    return sorted(entries)


def combining_class_runs():
    runs, start, previous = [], None, 0
    for cp in range(MAX_CODE_POINT + 2):
        ccc = unicodedata.combining(chr(cp)) if cp <= MAX_CODE_POINT else 0
        if ccc != previous:
            if previous:
                runs.append((start, cp - 1, previous))
            start, previous = cp, ccc
    return runs


def white_space():
    # White_Space (PropList.txt) is exactly U+0009..U+000D, U+0085 and the Z* categories.
    result = [cp for cp in range(MAX_CODE_POINT + 1)
              if 0x09 <= cp <= 0x0D or cp == 0x85
              or unicodedata.category(chr(cp)) in ("Zs", "Zl", "Zp")]
    python_isspace = [cp for cp in range(MAX_CODE_POINT + 1) if chr(cp).isspace()]
    assert sorted(set(python_isspace) - set(result)) == [0x1C, 0x1D, 0x1E, 0x1F], "isspace changed"
    assert not set(result) - set(python_isspace)
    return result


def rows(items, per_line):
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("    " + " ".join(items[i:i + per_line]))
    return "\n".join(lines)


def render():
    runs = category_runs()
    single, multiple = lowercase_tables()
    decompositions = decomposition_table()
    compositions = composition_table()
    ccc = combining_class_runs()
    spaces = white_space()

    pool, decomposition_rows = [], []
    for cp, seq in decompositions:
        assert len(seq) < 16 and len(pool) < (1 << 16)
        decomposition_rows.append(f"{{0x{cp:05X}, {len(pool)}, {len(seq)}}},")
        pool.extend(seq)
    lower_pool, lower_multi_rows = [], []
    for cp, seq in multiple:
        lower_multi_rows.append(f"{{0x{cp:05X}, {len(lower_pool)}, {len(seq)}}},")
        lower_pool.extend(seq)

    out = []
    # The Unicode version, not the Python release, names the data: two Pythons with the same
    # unicodedata must write the same file (the check runs with whichever python3 CMake finds).
    out.append("// GENERATED by scripts/gen_unicode_tables.py from Python's unicodedata,")
    out.append(f"// Unicode {unicodedata.unidata_version}. Do not edit: rerun the script "
               f"(python3 scripts/gen_unicode_tables.py).")
    out.append("// The lookups over these tables are at the end of the file (unicode_tables.h says what")
    out.append("// they mean).")
    out.append('#include "core/tokenizer/unicode_tables.h"')
    out.append("")
    out.append("#include <algorithm>")
    out.append("#include <cstdint>")
    out.append("#include <utility>")
    out.append("")
    out.append("namespace mt::tok {")
    out.append("")
    out.append(f'const char* const kUnicodeVersion = "{unicodedata.unidata_version}";')
    out.append("")
    out.append("namespace {")
    out.append("")
    out.append("// clang-format off")
    out.append("// General category runs: (first code point << 5) | category; a run lasts until the next.")
    out.append(f"constexpr uint32_t kCategoryRuns[{len(runs)}] = {{")
    out.append(rows([f"0x{(cp << 5) | cat:07X}," for cp, cat in runs], 8))
    out.append("};")
    out.append("")
    out.append("struct CodePointPair { uint32_t from, to; };")
    out.append("// Characters whose lowercase is one other character.")
    out.append(f"constexpr CodePointPair kLowercaseSingle[{len(single)}] = {{")
    out.append(rows([f"{{0x{a:05X}, 0x{b:05X}}}," for a, b in single], 5))
    out.append("};")
    out.append("")
    out.append("struct Expansion { uint32_t code_point; uint16_t offset; uint8_t length; };")
    out.append("// Characters whose lowercase is several characters (offsets into kLowercasePool).")
    out.append(f"constexpr Expansion kLowercaseMultiple[{len(multiple)}] = {{")
    out.append(rows(lower_multi_rows, 4))
    out.append("};")
    out.append(f"constexpr char32_t kLowercasePool[{len(lower_pool)}] = {{")
    out.append(rows([f"0x{c:05X}," for c in lower_pool], 8))
    out.append("};")
    out.append("")
    out.append("// Full canonical decompositions (offsets into kDecompositionPool), Hangul excepted.")
    out.append(f"constexpr Expansion kDecompositions[{len(decomposition_rows)}] = {{")
    out.append(rows(decomposition_rows, 4))
    out.append("};")
    out.append(f"constexpr char32_t kDecompositionPool[{len(pool)}] = {{")
    out.append(rows([f"0x{c:05X}," for c in pool], 8))
    out.append("};")
    out.append("")
    out.append("struct Composition { uint32_t first, second, composite; };")
    out.append("// Primary composites by (first, second), Hangul excepted.")
    out.append(f"constexpr Composition kCompositions[{len(compositions)}] = {{")
    out.append(rows([f"{{0x{a:05X}, 0x{b:05X}, 0x{c:05X}}}," for a, b, c in compositions], 3))
    out.append("};")
    out.append("")
    out.append("struct CombiningRun { uint32_t first, last; uint8_t combining_class; };")
    out.append("// Non-zero canonical combining classes.")
    out.append(f"constexpr CombiningRun kCombiningClasses[{len(ccc)}] = {{")
    out.append(rows([f"{{0x{a:05X}, 0x{b:05X}, {c}}}," for a, b, c in ccc], 4))
    out.append("};")
    out.append("")
    out.append("// White_Space (Rust's char::is_whitespace).")
    out.append(f"constexpr uint32_t kWhiteSpace[{len(spaces)}] = {{")
    out.append(rows([f"0x{c:04X}," for c in spaces], 8))
    out.append("};")
    out.append("// clang-format on")
    out.append("")
    out.append("} // namespace")
    out.append("")
    out.append(LOOKUPS)
    out.append("} // namespace mt::tok")
    return "\n".join(out) + "\n"


LOOKUPS = """\
GeneralCategory general_category(char32_t c) {
  if (c > 0x10FFFF) return GeneralCategory::Cn;
  const uint32_t key = (static_cast<uint32_t>(c) << 5) | 0x1F;
  const uint32_t* run = std::upper_bound(std::begin(kCategoryRuns), std::end(kCategoryRuns), key);
  return static_cast<GeneralCategory>(*(run - 1) & 0x1F);
}

size_t lowercase(char32_t c, char32_t out[kMaxLowercaseLength]) {
  const auto* single = std::lower_bound(
      std::begin(kLowercaseSingle), std::end(kLowercaseSingle), c,
      [](const CodePointPair& p, char32_t v) { return p.from < static_cast<uint32_t>(v); });
  if (single != std::end(kLowercaseSingle) && single->from == c) {
    out[0] = single->to;
    return 1;
  }
  for (const Expansion& e : kLowercaseMultiple) {
    if (e.code_point != c) continue;
    std::copy_n(kLowercasePool + e.offset, e.length, out);
    return e.length;
  }
  out[0] = c;
  return 1;
}

std::u32string_view canonical_decomposition(char32_t c) {
  const auto* e = std::lower_bound(
      std::begin(kDecompositions), std::end(kDecompositions), c,
      [](const Expansion& x, char32_t v) { return x.code_point < static_cast<uint32_t>(v); });
  if (e == std::end(kDecompositions) || e->code_point != c) return {};
  return {kDecompositionPool + e->offset, e->length};
}

char32_t primary_composite(char32_t first, char32_t second) {
  const auto* e =
      std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::pair(first, second),
                       [](const Composition& x, std::pair<char32_t, char32_t> v) {
                         return std::pair<uint32_t, uint32_t>(x.first, x.second) <
                                std::pair<uint32_t, uint32_t>(v.first, v.second);
                       });
  if (e == std::end(kCompositions) || e->first != first || e->second != second) return 0;
  return e->composite;
}

uint8_t canonical_combining_class(char32_t c) {
  const auto* r = std::lower_bound(
      std::begin(kCombiningClasses), std::end(kCombiningClasses), c,
      [](const CombiningRun& x, char32_t v) { return x.last < static_cast<uint32_t>(v); });
  if (r == std::end(kCombiningClasses) || r->first > c) return 0;
  return r->combining_class;
}

bool is_white_space(char32_t c) {
  return std::binary_search(std::begin(kWhiteSpace), std::end(kWhiteSpace),
                            static_cast<uint32_t>(c));
}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args()
    if args.check and args.out.exists():
        committed = args.out.read_text().split("\n", 2)[1]
        if f"Unicode {unicodedata.unidata_version}." not in committed:
            print(f"{args.out}: generated for another Unicode ({committed.strip('/ ')}); this "
                  f"Python has {unicodedata.unidata_version}: not compared")
            return 77
    text = render()
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'differs from the generator output'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} (Unicode {unicodedata.unidata_version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
