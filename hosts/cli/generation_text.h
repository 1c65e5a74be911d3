// What `model generate` and `model chat` share about text: the checkpoint's tokenizer, its
// end-of-sequence ids, and the stream that prints generated tokens as text while they come.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace mt::cli {

// The tokenizer of `tokenizer_dir`, else of the `hf_dir` folder when it has one.
std::optional<tok::Tokenizer> tokenizer_of(const std::string& tokenizer_dir,
                                           const std::string& hf_dir);

// The end-of-sequence ids of an --hf folder: eos_token_id (a number or a list of them) of
// config.json and of generation_config.json, both -- an instruct model's chat turn often ends
// with a token only generation_config.json names (Llama 3's <|eot_id|>), as transformers'
// generate() reads it.
std::vector<int32_t> eos_ids(const std::string& hf_dir);

// Prints the text of the tokens so far as it grows: a byte-level token may end inside a
// character, so what decodes to a trailing U+FFFD waits for the next token -- and when no
// token follows, finish() prints it as it decodes (the replacement characters included).
class TextStream {
public:
  explicit TextStream(const tok::Tokenizer& t) : t_(t) {}
  void push(int32_t id);
  void finish();

private:
  const tok::Tokenizer& t_;
  std::vector<tok::TokenId> ids_;
  std::string printed_;
};

} // namespace mt::cli
