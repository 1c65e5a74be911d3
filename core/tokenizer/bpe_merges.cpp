#include "core/tokenizer/bpe_merges.h"

#include <queue>

namespace mt::tok {

namespace {

// A candidate merge of the symbol at `pos` with the next one. `right` and `merged` are kept to
// recognise candidates made stale by merges since they were queued.
struct Candidate {
  uint32_t rank;
  size_t pos;
  TokenId left, right, merged;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

} // namespace

void BpeMerges::add(TokenId left, TokenId right, TokenId merged, uint32_t rank) {
  merges_.emplace(key(left, right), Merge{rank, merged});
}

const BpeMerges::Merge* BpeMerges::find(TokenId left, TokenId right) const {
  auto it = merges_.find(key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<TokenId> BpeMerges::merge(std::vector<TokenId> symbols) const {
  const size_t n = symbols.size();
  if (n < 2) return symbols;
  // A doubly linked list over positions; a merged-away symbol is marked dead.
  std::vector<size_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = i - 1; // wraps for i = 0: never read, as the check below is on `alive` and `next`
    next[i] = i + 1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](size_t pos) {
    if (pos >= n || next[pos] >= n) return;
    if (const Merge* m = find(symbols[pos], symbols[next[pos]]))
      queue.push({m->rank, pos, symbols[pos], symbols[next[pos]], m->merged});
  };
  for (size_t i = 0; i + 1 < n; ++i)
    consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (!alive[c.pos] || next[c.pos] >= n || symbols[c.pos] != c.left ||
        symbols[next[c.pos]] != c.right)
      continue;
    const size_t right = next[c.pos];
    symbols[c.pos] = c.merged;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] < n) prev[next[right]] = c.pos;
    if (c.pos > 0) consider(prev[c.pos]);
    consider(c.pos);
  }
  std::vector<TokenId> out;
  for (size_t i = 0; i < n; i = next[i])
    out.push_back(symbols[i]);
  return out;
}

} // namespace mt::tok
