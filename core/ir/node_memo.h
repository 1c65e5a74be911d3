// NodeMemo: a memo keyed by expression node identity, for the analyses that run after every
// schedule primitive (simplification, bounds, structural hashes of atoms). One open-addressing
// array instead of a node-based hash map: these memos live for one call, hold tens of
// entries, and allocating each entry cost more than the lookups. Each entry keeps its node
// alive, so that its address cannot be reused by a node created later in the same analysis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/ir/expr.h"

namespace mt {

template <typename V> class NodeMemo {
public:
  // The value stored for `node`, or null; valid until the next emplace.
  const V* find(const ExprNode* node) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot_of(node);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (!s.key) return nullptr;
      if (s.key.get() == node) return &s.value;
    }
  }

  // Stores `value` for `key` unless a value is stored already (as unordered_map::emplace).
  void emplace(const Expr& key, V value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot_of(key.get());; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.key.get() == key.get()) return;
      if (!s.key) {
        s.key = key;
        s.value = std::move(value);
        ++size_;
        return;
      }
    }
  }

private:
  struct Slot {
    Expr key; // null: empty
    V value{};
  };

  size_t slot_of(const ExprNode* node) const {
    // Fibonacci hashing of the address (nodes are at least 16-byte aligned).
    uint64_t h = (reinterpret_cast<uintptr_t>(node) >> 4) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.clear();
    slots_.resize(old.empty() ? 32 : 2 * old.size());
    size_ = 0;
    for (Slot& s : old)
      if (s.key) emplace(s.key, std::move(s.value));
  }

  std::vector<Slot> slots_; // size: 0 or a power of two
  size_t size_ = 0;
};

} // namespace mt
