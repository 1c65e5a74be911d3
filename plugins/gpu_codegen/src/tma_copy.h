// Hopper's tensor memory accelerator (TMA, cp.async.bulk.tensor, sm_90): one thread asks the
// hardware to copy a box of a tensor in device memory into shared memory, laid out with the
// 128-byte swizzle that wgmma reads (tensor_op.h's Swizzle128), and to count the bytes on an
// mbarrier that the block waits on. A pipelined fetch nest -- the loops a cooperative fetch
// became, one element or vector a lane -- is such a copy when it moves exactly the box
//   S[slot, r, c] = G[origin + r along one dimension, origin + c along the innermost]
// for every r < R, c < C, with the slot and the origin the same throughout. That is checked by
// running the nest's index arithmetic (every iteration, for two settings of the variables
// outside it), so the recogniser needs no algebra and refuses whatever it cannot prove.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_codegen {

// TMA's 128-byte swizzle: a box row of at most 128 bytes; 64 f16 / bf16 elements.
inline constexpr int64_t kTmaBoxCols = 64;
// The hardware's largest box along any dimension.
inline constexpr int64_t kTmaMaxBoxRows = 256;

// One box of the copy: the values of the nest's variables at the iteration that moves the
// box's first element (row 0, column 64 j), so that the indices written with them are the
// box's shared-memory start and its coordinates in G.
struct TmaBox {
  std::unordered_map<int64_t, int64_t> first; // nest variable id -> value
};

struct TmaCopy {
  P::Stmt store;              // S[slot, r, c] = G[...]
  P::Buffer shared, global;   // S and G
  std::vector<P::Expr> vars;  // the nest's loop variables, outermost first
  int64_t rows = 0, cols = 0; // R and C: S's last two dimensions
  int row_dim = -1;           // G's dimension along the box's rows (columns: the last one)
  std::vector<TmaBox> boxes;  // C / 64 boxes of R x 64 elements
  int64_t bytes() const { return rows * cols * shared->dtype.bits / 8; }
};

// An integer index expression's value with its variables set by `env` (id -> value), or nullopt
// for anything but integer arithmetic or a variable `env` does not set.
std::optional<int64_t> evaluate_index(const P::Expr& e,
                                      const std::unordered_map<int64_t, int64_t>& env);

// The copy the fetch nest under `loop` is, or nullopt with `why` set.
std::optional<TmaCopy> match_tma_copy(const P::Stmt& loop, std::string* why);

} // namespace mt::gpu_codegen
