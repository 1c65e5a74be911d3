// AMX tile products (Intel AMX-BF16's tdpbf16ps) in a lowered program. A schedule marks a nest
// of three loops with kTensorIntrinsicAnnotation = "amx.bf16" where it tiled a matmul-like block
// to one tile:
//   for i < M, j < N, k < K (any order):  C[.. i, j ..] += f32(A[.. i, k ..]) * f32(B[.. k, j ..])
// with M, N <= 16, K <= 32 and even, and C contiguous along j. Under -fpmath=bf16 the generator
// runs such a nest as one tile product -- A and B rounded to bf16, the products summed in f32
// -- after match_amx_tile() has checked that the loops compute exactly that; without AMX or
// without -fpmath=bf16 they run as written (and the interpreter always runs them: it stays the
// oracle).
//
// The instruction reads A with each row contiguous along k, and B in pairs: row p of the tile
// holds, for each j, B[2p, j] and B[2p + 1, j] side by side (Intel's "VNNI" layout). An operand
// that is a schedule's packed copy (an allocated buffer that only tile products read) is given
// that layout once, where the copy is made (with_amx_operands()), so that each product loads it
// as it is; any other operand is converted into a tile on the stack for each product.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

inline constexpr const char* kAmxBf16Intrinsic = "amx.bf16";
inline constexpr int64_t kAmxMaxRows = 16, kAmxMaxCols = 16, kAmxMaxDepth = 32;

struct AmxOperand {
  sdk::program::Expr value; // the operand as multiplied (a load of f32 or bf16, or its cast)
  sdk::program::Expr load;  // the load in it
  // Element strides of the load along the operand's tile rows and columns (A: i and k; B: k and
  // j), where `pairs` is false.
  int64_t row_stride = 0, col_stride = 0;
  // B only: the load reads a buffer laid out in pairs by with_amx_operands ([.., K/2, N, 2]),
  // at an even k when the tile's k is 0; `pair_row_stride` elements between its pair rows.
  bool pairs = false;
  int64_t pair_row_stride = 0;
  // Loadable as a tile where it is: A in bf16 with unit stride along k; B in pairs.
  bool direct = false;
};

struct AmxTile {
  const sdk::program::StmtNode* store = nullptr; // C[..] = C[..] + a * b
  int64_t i_var = 0, j_var = 0, k_var = 0;
  int64_t m = 0, n = 0, k = 0; // the extents
  int64_t c_row_stride = 0;    // C's element stride along i (along j it is 1)
  AmxOperand a, b;
};

// Whether `loop` carries the annotation asking for one tile product.
bool is_amx_marked(const sdk::program::StmtNode& loop);

// `loop` (marked or not) as one tile product, or nullopt where it is not exactly one.
std::optional<AmxTile> match_amx_tile(const sdk::program::StmtNode& loop);

// A block of tile products accumulated over a loop, the structure of a fast AMX kernel:
//   for k0:  for i2 < R:  for j2 < S:  [marked tile product, A and B loadable as they are]
// with C not moving with k0 and R x S + R + S <= 8 (the tile registers; the middle loops may be
// absent). The generator keeps the R x S accumulators in tile registers across k0 -- loaded
// before, stored after -- and per k0 step loads R tiles of A and S of B for R x S products.
struct AmxBlock {
  AmxTile tile;                         // the product, as matched
  const sdk::program::StmtNode* loop;   // k0
  int64_t rows_var = -1, cols_var = -1; // i2 and j2 (-1: absent)
  int64_t rows = 1, cols = 1;           // R and S
};
inline constexpr int64_t kAmxTileRegisters = 8;
std::optional<AmxBlock> match_amx_block(const sdk::program::StmtNode& loop);

// A copy into a buffer laid out in pairs by with_amx_operands -- the B panel a schedule packs --
//   for r: for c_1: .. for c_n: B_s[.., r // 2, c, r % 2] = value
//   (c = c_1 * .. + c_n, the loops enumerating it in order: a vectorized loop split in chunks)
// or, with two loops, `for c: for r:` -- any loop kinds -- recognised so that the generator
// writes whole pair rows: where `value` is contiguous along c (a matmul's B[k, j]) two rows 2p
// and 2p + 1 interleaved; where it is contiguous along r (a dense layer's weight W[j, k]) 16
// columns of 32 rows each loaded as 16 pairs and the 16 x 16 pairs transposed in registers.
// Needs r's extent a multiple of 32 (2 where along c), c's innermost loop's of 16.
struct PairCopy {
  const sdk::program::StmtNode* store = nullptr;
  int64_t row_var = 0, rows = 0; // the loop r moves with, its extent
  // The loops c moves with, outermost first: (variable, extent); c = their mixed-radix value.
  std::vector<std::pair<int64_t, int64_t>> col_loops;
  int64_t cols = 0;        // the product of their extents
  bool along_rows = false; // value contiguous along r (else along c)
};
std::optional<PairCopy> match_pair_copy(const sdk::program::StmtNode& outer);

// How with_amx_operands lays out an allocated buffer that tile products read: as their A
// operand (bf16) or their B operand (bf16 pairs), by buffer id.
enum class AmxRole { A, B };
using AmxRoles = std::unordered_map<int64_t, AmxRole>;

// The allocated buffers of `p` that only marked tile products read, all in the same role.
AmxRoles amx_operand_roles(const sdk::program::Program& p);

// `p` with the buffers named in `roles` laid out so (allocated ones and params alike).
sdk::program::Program with_amx_layout(const sdk::program::Program& p, const AmxRoles& roles);

// `p` with every allocated buffer that only marked tile products read as their A operand
// stored in bf16, and every one only read as their B operand stored in bf16 pairs
// ([.., K, N] -> [.., K/2, N, 2]; the stores into it round, the loads read it there). Programs
// without marked nests come back unchanged.
sdk::program::Program with_amx_operands(const sdk::program::Program& p);

} // namespace mt::llvm_cpu
