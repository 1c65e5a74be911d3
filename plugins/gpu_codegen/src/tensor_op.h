// Tensor-core operations in a lowered program: loop nests a schedule marked with
// kTensorIntrinsicAnnotation, recognised as one of WMMA's warp-wide 16x16x16 operations (fill,
// load, multiply-accumulate, store) on fragments -- buffers in the "wmma.matrix_a",
// "wmma.matrix_b" and "wmma.accumulator" scopes. The writer emits the instruction for a nest
// only after this check has proved that the loops compute exactly what it does, so the
// interpreter, which runs the loops, stays the oracle.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "metatune/gpu_codegen/dialect.hpp"
#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_codegen {

inline constexpr int64_t kTensorTile = 16;

enum class TensorOpKind { Fill, LoadA, LoadB, Mma, Store };

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
  std::string name; // the annotation's value ("wmma.mma"), for messages
  // Fill, loads, mma: the fragment written; store: the fragment read. Rows and columns are the
  // matrix's own (M x K for matrix_a, K x N for matrix_b, M x N for the accumulator).
  Tile frag;
  Tile mem;        // loads and store: the memory side, rows and columns as the fragment's
  Tile a, b;       // mma: the operand fragments
  double fill = 0; // fill: the value
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
  int64_t count = 1; // 16x16 fragments the buffer holds
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

} // namespace mt::gpu_codegen
