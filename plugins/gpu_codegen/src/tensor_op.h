// Tensor-core operations in a lowered program: loop nests a schedule marked with
// kTensorIntrinsicAnnotation, recognised as one of WMMA's warp-wide 16x16x16 operations (fill,
// load, multiply-accumulate, store) on fragments -- buffers in the "wmma.matrix_a",
// "wmma.matrix_b" and "wmma.accumulator" scopes -- or as one of Hopper's warpgroup operations
// (wgmma, sm_90a): a 64xN accumulator in the "wgmma.accumulator" scope, filled, updated by
// 64xNx16 products whose operands the instruction reads from shared memory itself, and stored. The
// writer emits the instruction for a nest only after this check has proved that the loops compute
// exactly what it does, so the interpreter, which runs the loops, stays the oracle.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "metatune/gpu_codegen/dialect.hpp"
#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_codegen {

inline constexpr int64_t kTensorTile = 16;
// wgmma's m64nNk16: 64 rows a warpgroup, N a multiple of 8 up to 256, k 16.
inline constexpr int64_t kGroupRows = 64, kGroupMaxCols = 256;
inline constexpr int64_t kWarpgroupThreads = 128;

enum class TensorOpKind { Fill, LoadA, LoadB, Mma, Store };
// Who executes an operation together: a warp (WMMA) or a warpgroup of 4 warps (wgmma).
enum class TensorUnit { Warp, Warpgroup };

bool is_fragment_scope(const std::string& scope);

// A 16x16 tile of a buffer: the index of its first element, and the buffer dimensions along
// which the tile's rows and columns run (every other dimension is fixed at `base`).
struct Tile {
  P::Buffer buffer;
  std::vector<P::Expr> base;
  int row_dim = -1, col_dim = -1;
};

struct TensorOp {
  TensorOpKind kind = TensorOpKind::Fill;
  TensorUnit unit = TensorUnit::Warp;
  std::string name;           // the annotation's value ("wmma.mma"), for messages
  int64_t cols = kTensorTile; // the accumulator tile's columns (N); rows: 16, or 64 for wgmma
  // Fill, loads, mma: the fragment written; store: the fragment read. Rows and columns are the
  // matrix's own (M x K for matrix_a, K x N for matrix_b, M x N for the accumulator).
  Tile frag;
  Tile mem;        // loads and store: the memory side, rows and columns as the fragment's
  Tile a, b;       // mma: the operand fragments (wgmma: the operand tiles in shared memory)
  double fill = 0; // fill: the value
  // wgmma.mma: the rule asked for the 128-byte swizzled layout (kWgmmaSwizzleAnnotation) of the
  // operands whose rows are whole 128-byte lines.
  bool swizzle128 = false;
  // wgmma.mma: the rule asked for the swizzled operands' pipelined fetches to be TMA copies
  // (kWgmmaTmaAnnotation, tma_copy.h).
  bool tma = false;
  // wgmma.mma with tma: the rule asked for a producer warpgroup to issue those copies
  // (kWgmmaProducerAnnotation; the writer's warp specialisation).
  bool producer = false;
};

// The nest under `loop` as the operation its annotation names; throws UnsupportedError saying
// why it is not one.
TensorOp match_tensor_op(const P::Stmt& loop);

// How each fragment buffer is used, from all the operations of a kernel: its role (from the
// multiply-accumulates) and, for matrix_a/b, whether its loads read memory column-major. The
// copies' tiles (fill, loads, store) are turned round to the matrix's rows and columns, which
// only the multiply-accumulate tells.
// Throws UnsupportedError when one buffer plays two roles, a load feeds a fragment of the other
// operand, or loads of one fragment disagree on the layout.
struct FragmentInfo {
  FragmentRole role = FragmentRole::Accumulator;
  bool col_major = false;
  int64_t count = 1; // 16x16 fragments the buffer holds (wgmma: 64xN tiles)
  TensorUnit unit = TensorUnit::Warp;
  int64_t cols = kTensorTile; // N of a wgmma accumulator's tiles
};
std::map<int64_t, FragmentInfo> fragment_infos(std::vector<TensorOp>& ops);

// Which memory layout a load or store uses, and its leading dimension in elements: row-major
// when the tile's columns are the buffer's innermost dimension, column-major when its rows are.
struct MemoryLayout {
  bool col_major = false;
  int64_t ld = 0;
};
MemoryLayout memory_layout(const Tile& mem);

// Whether a memory tile meets WMMA's alignment: its first element at a multiple of 16 elements
// (32 bytes or more: load/store_matrix_sync want 256-bit aligned addresses, and every array
// they touch starts aligned) and a leading dimension of whole 16-byte units.
bool memory_tile_aligned(const Tile& mem);

// The fragment (in the buffer's row-major grid of 16x16 fragments) a tile starts, as an
// expression of the tile's base, when the base is provably a multiple of 16 along the rows
// and columns.
P::Expr fragment_index(const Tile& frag);

// wgmma's operands in shared memory: the buffer's last two dimensions [R, C], plus R * C
// elements per step of the leading dimensions (a pipeline's slots), in one of two layouts.
// K-major operands (A[m, k], B[n, k]) have k along C, MN-major ones (B[k, n], A[k, m]) along R.
enum class CoreMatrixLayout {
  // 8x8 core matrices (8 rows of 16 bytes), row-major among themselves: element (r, c) at
  //   ((r / 8) * (C / 8) + c / 8) * 64 + (r % 8) * 8 + c % 8.
  // The next core matrix along the rows is 128 bytes on, along the columns C * 16 bytes on.
  Interleaved,
  // CUTLASS's and cuBLAS's layout, for C a multiple of 64 (rows of 128 bytes): atoms of 8 rows
  // (1024 bytes, 1024-aligned) in which the 16-byte chunk j of row r sits at chunk j ^ (r % 8),
  // so that the 8 rows of one chunk column lie in 8 different bank groups; the atoms follow each
  // other down the rows of a 64-column block, and the blocks are R * 64 elements apart:
  //   (c / 64) * R * 64 + (r / 8) * 512 + (r % 8) * 64 + (((c % 64) / 8) ^ (r % 8)) * 8 + c % 8.
  Swizzle128,
};

// The shared buffers wgmma reads, by id, with their layouts: swizzled where an operation asks
// for it and the buffer's rows are whole 128-byte lines, else interleaved. Throws
// UnsupportedError when one cannot be held so (its last two dimensions not multiples of 8, or
// the tile not along them), or two operations want one buffer in two layouts.
std::map<int64_t, CoreMatrixLayout> core_matrix_operands(const std::vector<TensorOp>& ops);
// The element offset of buffer[indices] in that layout.
P::Expr core_matrix_offset(const P::BufferNode& buffer, const std::vector<P::Expr>& indices,
                           CoreMatrixLayout layout);

// A wgmma operand tile in shared memory as the instruction's descriptor gives it: whether it is
// K-major (k along the buffer's innermost dimension), the descriptor's leading and stride byte
// offsets, and whether it is swizzled. Interleaved: the leading offset runs along k, the stride
// offset along m or n. Swizzled K-major: the stride offset is the next 8 rows' (1024 bytes; the
// leading one is not read); swizzled MN-major: the leading offset is the next 64-column block's
// (along m or n), the stride offset the next 8 rows' (along k).
struct GroupOperand {
  bool k_major = true;
  int64_t lbo_bytes = 0, sbo_bytes = 0;
  bool swizzle128 = false;
  // wgmma.mma: the rule asked for the swizzled operands' pipelined fetches to be TMA copies
  // (kWgmmaTmaAnnotation, tma_copy.h).
  bool tma = false;
};
GroupOperand group_operand(const Tile& t, bool is_a, CoreMatrixLayout layout);

} // namespace mt::gpu_codegen
