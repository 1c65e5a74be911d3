// What the BPE models share of tokenizer.json's "model" object: the vocabulary, the merges in
// rank order (and their ids), the unknown token, and the refusal of fields neither model
// supports.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <optional>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bpe_merges.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/vocabulary.h"

namespace mt::tok {

// model.vocab: token -> id. Throws TokenizerError naming an entry that is not an id.
std::unordered_map<std::string, TokenId> read_bpe_vocab(const TokenizerJson& doc,
                                                        const Json& model);

// model.merges: "a b" strings (the older format) or ["a", "b"] pairs; absent: none.
std::vector<std::pair<std::string, std::string>> read_bpe_merges(const TokenizerJson& doc,
                                                                 const Json& model);

// The merges as ids of `vocab`'s model tokens. Throws TokenizerError naming `source` and
// "model.merges[i]" for a merge whose parts or result are not in the vocabulary.
BpeMerges bpe_merges_of(const Vocabulary& vocab,
                        const std::vector<std::pair<std::string, std::string>>& merges,
                        const std::string& source);

// The id of model.unk_token (none: none). Throws TokenizerError naming `source` when it is not
// in the vocabulary.
std::optional<TokenId> bpe_unk_id(const Vocabulary& vocab, const std::optional<std::string>& unk,
                                  const std::string& source);

// Throws TokenizerError "model.KEY is set: WHY" when model.KEY is present and not unset
// (null, "", false or 0).
void refuse_bpe_field(const TokenizerJson& doc, const Json& model, const char* key,
                      const char* why);

} // namespace mt::tok
