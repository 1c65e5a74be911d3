// libFuzzer target for the tokenizer.json loaders (core/tokenizer: ByteLevelBpe,
// SentencePieceBpe and WordPiece
// from a parsed document, their added tokens and post-processors), fed whole files, and for
// what a loaded tokenizer does with text: encode (with and without special tokens), encode a
// pair, decode. Any file may be refused, but only with a TokenizerError; a crash, leak,
// sanitizer report, hang or any other exception is a bug. A loaded tokenizer must encode the
// probe texts into ids it can name, give a pair one type id per id, and decode its own ids.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/sentence_piece_bpe.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_error.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/word_piece.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_tokenizer_json: %s\n", what.c_str());
  std::abort();
}

std::optional<mt::tok::Tokenizer> load(const mt::tok::TokenizerJson& doc) {
  const std::string type = doc.component_type("model");
  if (type == "BPE" && mt::tok::SentencePieceBpe::is_its_form(doc))
    return mt::tok::Tokenizer(mt::tok::SentencePieceBpe::from_tokenizer_json(doc));
  if (type == "BPE") return mt::tok::Tokenizer(mt::tok::ByteLevelBpe::from_tokenizer_json(doc));
  if (type == "WordPiece") return mt::tok::Tokenizer(mt::tok::WordPiece::from_tokenizer_json(doc));
  return std::nullopt;
}

void probe(const mt::tok::Tokenizer& tok) {
  const char* texts[] = {"Hello world", "ab<|endoftext|>a [CLS] x",
                         "  \t\u00e9t\u00e9 \u4e2d\u6587 ##s", ""};
  for (const char* text : texts) {
    for (bool special : {false, true}) {
      const std::vector<mt::tok::TokenId> ids = tok.encode(text, special);
      for (mt::tok::TokenId id : ids)
        if (!tok.id_to_token(id) && !special) bug("encoded an id it cannot name");
      (void)tok.decode(ids);
      (void)tok.decode(ids, false);
    }
    try {
      const mt::tok::Encoding pair = tok.encode_pair(text, "second one", true);
      if (pair.type_ids.size() != pair.ids.size()) bug("a pair's type ids do not match its ids");
    } catch (const mt::tok::TokenizerError&) { // a pair template it cannot use
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mt::tok::Json root = mt::tok::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return 0; // not JSON: TokenizerJson::read refuses it before this
  const mt::tok::TokenizerJson doc("fuzz-input/tokenizer.json", std::move(root));
  std::optional<mt::tok::Tokenizer> tok;
  try {
    tok = load(doc);
  } catch (const mt::tok::TokenizerError&) {
    return 0;
  } catch (const std::exception& e) {
    bug(std::string("refused with ") + e.what() + " instead of a TokenizerError");
  }
  if (!tok) return 0;
  try {
    probe(*tok);
  } catch (const std::exception& e) {
    bug(std::string("a loaded tokenizer failed on text: ") + e.what());
  }
  return 0;
}
