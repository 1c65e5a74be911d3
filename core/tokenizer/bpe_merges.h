// The merge step of a BPE model: a word's symbols (token ids) merged pair by pair, always the
// pair of lowest rank first and the leftmost of equal ones, until no pair of neighbours has a
// merge -- the tokenizers crate's BPE::merge_word, with a priority queue over positions.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"

namespace mt::tok {

class BpeMerges {
public:
  // The merge of rank `rank` (its index in the merges list) turns (left, right) into `merged`.
  // A pair given twice keeps its first (lowest) rank.
  void add(TokenId left, TokenId right, TokenId merged, uint32_t rank);
  size_t size() const { return merges_.size(); }

  std::vector<TokenId> merge(std::vector<TokenId> symbols) const;

private:
  struct Merge {
    uint32_t rank;
    TokenId merged;
  };
  static uint64_t key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(left) << 32) | right;
  }
  const Merge* find(TokenId left, TokenId right) const;

  std::unordered_map<uint64_t, Merge> merges_;
};

} // namespace mt::tok
