// Which block-visible memory (shared and global buffers, not a thread's private arrays) a
// statement reads and writes, and at which indices: the writer puts a barrier between two
// statements when one writes what the other touches at a different index, because then one
// thread hands data to another. The same index expression on both sides means the same thread
// (indices are spelled with variable ids, so loops that merely share a name never match).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "metatune/sdk/program.hpp"

namespace mt::gpu_codegen {

namespace P = mt::sdk::program;

// An index key that matches nothing: a write made by one thread for all of them.
inline constexpr const char* kAnyThreadKey = "*";

struct Accesses {
  std::map<int64_t, std::set<std::string>> reads, writes; // buffer id -> index keys
  void merge(const Accesses& o);
  bool empty() const { return reads.empty() && writes.empty(); }
};

std::string index_key(const std::vector<P::Expr>& indices);

// `visible(b)`: whether b is memory the threads of a block share. `distinct(indices)`: whether
// the index tells the threads apart (it uses a variable of every thread dimension the block
// has); an index that does not is the same element for several threads, so its key is
// kAnyThreadKey and it never proves "same thread".
// `in_registers(store)`: a store the writer turns into register arithmetic (a cross-thread
// reduction's update and init), which touches no memory.
Accesses accesses_of(const P::Stmt& s, const std::function<bool(const P::Buffer&)>& visible,
                     const std::function<bool(const std::vector<P::Expr>&)>& distinct,
                     const std::function<bool(const P::Stmt&)>& in_registers);

// True when `after` must wait for `before` (or the other way round) across threads.
bool conflicts(const Accesses& before, const Accesses& after);

} // namespace mt::gpu_codegen
