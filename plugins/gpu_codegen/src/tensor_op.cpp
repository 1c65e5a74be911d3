// Recognising tensor-core operations in marked loop nests (tensor_op.h).
#include "tensor_op.h"

#include <algorithm>
#include <optional>

#include "metatune/sdk/expr_equal.hpp"

namespace mt::gpu_codegen {

namespace {

using P::ExprKind;
using P::StmtKind;

[[noreturn]] void refuse(const std::string& intrinsic, const std::string& why) {
  throw UnsupportedError("the nest marked " + intrinsic + " " + why);
}

// An index split into a part that does not use the nest's variables and at most one of them
// added with coefficient 1 (`base + v`): the only form a tile's index may take.
struct SplitIndex {
  P::Expr base;
  int var = -1; // position in the nest's variables, -1 when none is used
};

std::optional<SplitIndex> split_index(const P::Expr& e, const std::vector<int64_t>& vars) {
  auto uses_nest = [&](const P::Expr& x) {
    for (int64_t v : vars)
      if (P::uses_var(x, v)) return true;
    return false;
  };
  if (!uses_nest(e)) return SplitIndex{e, -1};
  if (e->kind == ExprKind::Var)
    for (size_t i = 0; i < vars.size(); ++i)
      if (e->var_id == vars[i]) return SplitIndex{P::int_imm(0), static_cast<int>(i)};
  if (e->kind == ExprKind::Add || e->kind == ExprKind::Sub) {
    auto a = split_index(e->args[0], vars);
    if (!a) return std::nullopt;
    if (e->kind == ExprKind::Sub) {
      if (uses_nest(e->args[1])) return std::nullopt;
      return SplitIndex{a->base - e->args[1], a->var};
    }
    auto b = split_index(e->args[1], vars);
    if (!b || (a->var >= 0 && b->var >= 0)) return std::nullopt;
    return SplitIndex{a->base + b->base, a->var >= 0 ? a->var : b->var};
  }
  return std::nullopt;
}

// The tile a load or store touches: `rows` and `cols` are the positions of the nest variables
// that run along the tile's rows and columns.
std::optional<Tile> tile_of(const P::Buffer& buffer, const std::vector<P::Expr>& indices,
                            const std::vector<int64_t>& vars, int rows, int cols,
                            int64_t row_extent = kTensorTile, int64_t col_extent = kTensorTile) {
  Tile t;
  t.buffer = buffer;
  for (size_t d = 0; d < indices.size(); ++d) {
    auto s = split_index(indices[d], vars);
    if (!s) return std::nullopt;
    t.base.push_back(s->base);
    if (s->var < 0) continue;
    if (s->var != rows && s->var != cols) return std::nullopt; // a variable it must not use
    int& slot = s->var == rows ? t.row_dim : t.col_dim;
    if (slot >= 0) return std::nullopt; // one variable on two dimensions
    slot = static_cast<int>(d);
  }
  if (t.row_dim < 0 || t.col_dim < 0) return std::nullopt;
  // The whole tile lies inside the buffer along the two dimensions it runs on (fragments are
  // whole; a partial tile would need a guard the instruction does not have).
  if (buffer->shape[static_cast<size_t>(t.row_dim)] < row_extent ||
      buffer->shape[static_cast<size_t>(t.col_dim)] < col_extent)
    return std::nullopt;
  return t;
}

// The operand types WMMA multiplies: f16 (sm_70+) and bf16 (sm_80+).
bool is_half(P::DType t) {
  return (t.kind == P::DTypeKind::Float || t.kind == P::DTypeKind::BFloat) && t.bits == 16;
}
bool is_f32(P::DType t) {
  return t.kind == P::DTypeKind::Float && t.bits == 32;
}

// `x` itself, or x under a cast to f32 (the operands' widening).
P::Expr under_cast(const P::Expr& e) {
  if (e->kind == ExprKind::Cast && is_f32(e->dtype)) return e->args[0];
  return e;
}

// The loop nest under an annotated loop: `depth` perfectly nested loops of extent 16 (serial or
// unrolled) around one store.
struct Nest {
  std::vector<int64_t> vars;
  std::vector<int64_t> extents;
  P::Stmt store;
};

// A warpgroup's nests have loops of 64, N (a multiple of 8 up to 256) and 16, in an order
// the operation's roles settle: any such extent passes here.
bool group_extent(int64_t e) {
  return e > 0 && e % 8 == 0 && e <= kGroupMaxCols;
}

Nest nest_of(const P::Stmt& loop, size_t depth, const std::string& name,
             TensorUnit unit = TensorUnit::Warp) {
  Nest n;
  P::Stmt s = loop;
  const std::string what =
      std::to_string(depth) + (unit == TensorUnit::Warp ? " serial loops of 16 around one store"
                                                        : " serial loops of 16, 64 or N around one "
                                                          "store");
  for (size_t i = 0; i < depth; ++i) {
    const bool extent_ok =
        s && s->kind == StmtKind::For &&
        (unit == TensorUnit::Warp ? s->extent == kTensorTile : group_extent(s->extent));
    if (!extent_ok || (s->for_kind != P::ForKind::Serial && s->for_kind != P::ForKind::Unrolled))
      refuse(name, "is not " + what);
    n.vars.push_back(s->loop_var->var_id);
    n.extents.push_back(s->extent);
    s = s->body;
  }
  if (!s || s->kind != StmtKind::Store) refuse(name, "is not " + what);
  n.store = s;
  return n;
}

TensorOp match_fill(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 2, name);
  const P::Stmt& st = n.store;
  if (st->buffer->scope != "wmma.accumulator" || !is_f32(st->buffer->dtype))
    refuse(name, "does not write an f32 wmma.accumulator buffer");
  if (st->value->kind != ExprKind::FloatImm) refuse(name, "does not store a constant");
  auto t = tile_of(st->buffer, st->indices, n.vars, 0, 1);
  if (!t) refuse(name, "does not write a 16x16 tile");
  TensorOp op;
  op.kind = TensorOpKind::Fill;
  op.frag = *t;
  op.fill = st->value->float_value;
  return op;
}

TensorOp match_load(const P::Stmt& loop, const std::string& name, bool a) {
  Nest n = nest_of(loop, 2, name);
  const P::Stmt& st = n.store;
  const char* scope = a ? "wmma.matrix_a" : "wmma.matrix_b";
  if (st->buffer->scope != scope || !is_half(st->buffer->dtype))
    refuse(name, std::string("does not write an f16 or bf16 ") + scope + " buffer");
  const P::Expr& v = st->value;
  if (v->kind != ExprKind::Load || v->buffer->dtype != st->buffer->dtype ||
      is_fragment_scope(v->buffer->scope))
    refuse(name, "does not copy memory of the fragment's type into the fragment");
  // Rows along the first variable for now: which variable runs along the matrix's rows is the
  // multiply-accumulate's to say (fragment_infos turns the tiles round to match it).
  auto frag = tile_of(st->buffer, st->indices, n.vars, 0, 1);
  auto mem = tile_of(v->buffer, v->args, n.vars, 0, 1);
  if (!frag) refuse(name, "does not write a 16x16 tile");
  if (!mem) refuse(name, "does not read a 16x16 tile of memory");
  TensorOp op;
  op.kind = a ? TensorOpKind::LoadA : TensorOpKind::LoadB;
  op.frag = *frag;
  op.mem = *mem;
  return op;
}

TensorOp match_store(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 2, name);
  const P::Stmt& st = n.store;
  const P::Expr& v = st->value;
  if (v->kind != ExprKind::Load || v->buffer->scope != "wmma.accumulator" ||
      !is_f32(v->buffer->dtype))
    refuse(name, "does not read an f32 wmma.accumulator buffer");
  if (!is_f32(st->buffer->dtype) || is_fragment_scope(st->buffer->scope))
    refuse(name, "does not write f32 memory");
  auto frag = tile_of(v->buffer, v->args, n.vars, 0, 1); // turned round as for loads
  auto mem = tile_of(st->buffer, st->indices, n.vars, 0, 1);
  if (!frag) refuse(name, "does not read a 16x16 tile");
  if (!mem) refuse(name, "does not write a 16x16 tile of memory");
  TensorOp op;
  op.kind = TensorOpKind::Store;
  op.frag = *frag;
  op.mem = *mem;
  return op;
}

// acc[..] = acc[..] + f32(p[..]) * f32(q[..]), the sum and the product in either order, with
// acc the stored buffer read at the stored element: the loads, or the refusal.
struct MultiplyAdd {
  P::Expr acc, p, q;
};
MultiplyAdd multiply_add(const P::Stmt& st, const std::string& name) {
  const P::Expr& v = st->value;
  if (v->kind != ExprKind::Add) refuse(name, "is not acc = acc + a * b");
  P::Expr acc = v->args[0], prod = v->args[1];
  if (prod->kind == ExprKind::Load) std::swap(acc, prod);
  if (acc->kind != ExprKind::Load || acc->buffer->id != st->buffer->id ||
      prod->kind != ExprKind::Mul)
    refuse(name, "is not acc = acc + a * b");
  P::Expr p = under_cast(prod->args[0]), q = under_cast(prod->args[1]);
  if (p->kind != ExprKind::Load || q->kind != ExprKind::Load) refuse(name, "is not a * b");
  bool same = st->indices.size() == acc->args.size();
  for (size_t d = 0; same && d < st->indices.size(); ++d)
    same = P::expr_equal(st->indices[d], acc->args[d]);
  if (!same) refuse(name, "reads another element of the accumulator than it writes");
  return {acc, p, q};
}

TensorOp match_mma(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 3, name);
  const P::Stmt& st = n.store;
  if (st->buffer->scope != "wmma.accumulator" || !is_f32(st->buffer->dtype))
    refuse(name, "does not update an f32 wmma.accumulator buffer");
  // acc[i, j] = acc[i, j] + f32(a[i, k]) * f32(b[k, j]).
  const MultiplyAdd m = multiply_add(st, name);
  P::Expr acc = m.acc, a = m.p, b = m.q;
  if (b->buffer->scope == "wmma.matrix_a") std::swap(a, b);
  if (a->buffer->scope != "wmma.matrix_a" || b->buffer->scope != "wmma.matrix_b")
    refuse(name, "does not multiply a wmma.matrix_a by a wmma.matrix_b fragment");
  if (!is_half(a->buffer->dtype) || a->buffer->dtype != b->buffer->dtype)
    refuse(name, "does not multiply two f16 or two bf16 fragments");
  // Which of the three loops is i, j and k: i indexes acc and a, j acc and b, k a and b.
  auto uses = [&](const P::Expr& load, size_t var) {
    for (const auto& x : load->args)
      if (P::uses_var(x, n.vars[var])) return true;
    return false;
  };
  int i = -1, j = -1, k = -1;
  for (size_t x = 0; x < 3; ++x) {
    const bool c = uses(acc, x), ua = uses(a, x), ub = uses(b, x);
    int* slot = (c && ua && !ub) ? &i : (c && ub && !ua) ? &j : (ua && ub && !c) ? &k : nullptr;
    if (!slot || *slot >= 0)
      refuse(name, "is not a 16x16x16 multiply-accumulate (each loop must be one of i, j, k)");
    *slot = static_cast<int>(x);
  }
  auto tc = tile_of(st->buffer, st->indices, n.vars, i, j);
  auto ta = tile_of(a->buffer, a->args, n.vars, i, k);
  auto tb = tile_of(b->buffer, b->args, n.vars, k, j);
  if (!tc || !ta || !tb) refuse(name, "does not access 16x16 tiles of its fragments");
  TensorOp op;
  op.kind = TensorOpKind::Mma;
  op.frag = *tc;
  op.a = *ta;
  op.b = *tb;
  return op;
}

// ---- wgmma (warpgroup) nests ----------------------------------------------------------------

// Of two loops that index the accumulator, the one on its earlier dimension: the rows (the
// accumulator is [64 * tiles, N], row-major).
int accumulator_rows(const std::vector<P::Expr>& indices, const Nest& n, int x, int y) {
  for (const P::Expr& e : indices) {
    if (P::uses_var(e, n.vars[static_cast<size_t>(x)])) return x;
    if (P::uses_var(e, n.vars[static_cast<size_t>(y)])) return y;
  }
  return x;
}

// The columns (N) need no check here: nest_of took only multiples of 8 up to 256.
void check_group_rows(const std::string& name, const Nest& n, int rows) {
  if (n.extents[static_cast<size_t>(rows)] != kGroupRows)
    refuse(name, "does not cover 64 rows of the accumulator (a warpgroup's m64)");
}

TensorOp match_group_fill(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 2, name, TensorUnit::Warpgroup);
  const P::Stmt& st = n.store;
  if (st->buffer->scope != "wgmma.accumulator" || !is_f32(st->buffer->dtype))
    refuse(name, "does not write an f32 wgmma.accumulator buffer");
  if (st->value->kind != ExprKind::FloatImm) refuse(name, "does not store a constant");
  int rows = accumulator_rows(st->indices, n, 0, 1), cols = 1 - rows;
  check_group_rows(name, n, rows);
  auto t = tile_of(st->buffer, st->indices, n.vars, rows, cols, kGroupRows,
                   n.extents[static_cast<size_t>(cols)]);
  if (!t) refuse(name, "does not write a 64xN tile");
  TensorOp op;
  op.kind = TensorOpKind::Fill;
  op.unit = TensorUnit::Warpgroup;
  op.cols = n.extents[static_cast<size_t>(cols)];
  op.frag = *t;
  op.fill = st->value->float_value;
  return op;
}

TensorOp match_group_store(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 2, name, TensorUnit::Warpgroup);
  const P::Stmt& st = n.store;
  const P::Expr& v = st->value;
  if (v->kind != ExprKind::Load || v->buffer->scope != "wgmma.accumulator" ||
      !is_f32(v->buffer->dtype))
    refuse(name, "does not read an f32 wgmma.accumulator buffer");
  if (!is_f32(st->buffer->dtype) || is_fragment_scope(st->buffer->scope))
    refuse(name, "does not write f32 memory");
  int rows = accumulator_rows(v->args, n, 0, 1), cols = 1 - rows;
  check_group_rows(name, n, rows);
  const int64_t ncols = n.extents[static_cast<size_t>(cols)];
  auto frag = tile_of(v->buffer, v->args, n.vars, rows, cols, kGroupRows, ncols);
  auto mem = tile_of(st->buffer, st->indices, n.vars, rows, cols, kGroupRows, ncols);
  if (!frag) refuse(name, "does not read a 64xN tile");
  if (!mem) refuse(name, "does not write a 64xN tile of memory");
  TensorOp op;
  op.kind = TensorOpKind::Store;
  op.unit = TensorUnit::Warpgroup;
  op.cols = ncols;
  op.frag = *frag;
  op.mem = *mem;
  return op;
}

TensorOp match_group_mma(const P::Stmt& loop, const std::string& name) {
  Nest n = nest_of(loop, 3, name, TensorUnit::Warpgroup);
  const P::Stmt& st = n.store;
  if (st->buffer->scope != "wgmma.accumulator" || !is_f32(st->buffer->dtype))
    refuse(name, "does not update an f32 wgmma.accumulator buffer");
  const MultiplyAdd m = multiply_add(st, name);
  P::Expr acc = m.acc, p = m.p, q = m.q;
  if (p->buffer->scope != "shared" || q->buffer->scope != "shared")
    refuse(name, "does not multiply two operands in shared memory");
  if (!is_half(p->buffer->dtype) || p->buffer->dtype != q->buffer->dtype)
    refuse(name, "does not multiply two f16 or two bf16 operands");
  auto uses = [&](const P::Expr& load, size_t var) {
    for (const auto& x : load->args)
      if (P::uses_var(x, n.vars[var])) return true;
    return false;
  };
  // Each loop indexes the accumulator and one operand (that operand's m or n), or both
  // operands (k).
  int own_p = -1, own_q = -1, k = -1;
  for (size_t x = 0; x < 3; ++x) {
    const bool c = uses(acc, x), up = uses(p, x), uq = uses(q, x);
    int* slot = (c && up && !uq)   ? &own_p
                : (c && uq && !up) ? &own_q
                : (up && uq && !c) ? &k
                                   : nullptr;
    if (!slot || *slot >= 0)
      refuse(name, "is not a 64xNx16 multiply-accumulate (each loop must be one of m, n, k)");
    *slot = static_cast<int>(x);
  }
  // A is the operand along the accumulator's rows.
  int i = accumulator_rows(acc->args, n, own_p, own_q);
  if (i == own_q) std::swap(p, q);
  int j = i == own_p ? own_q : own_p;
  check_group_rows(name, n, i);
  if (n.extents[static_cast<size_t>(k)] != kTensorTile)
    refuse(name, "does not sum 16 products (a warpgroup's k16)");
  const int64_t ncols = n.extents[static_cast<size_t>(j)];
  auto tc = tile_of(st->buffer, st->indices, n.vars, i, j, kGroupRows, ncols);
  auto ta = tile_of(p->buffer, p->args, n.vars, i, k, kGroupRows, kTensorTile);
  auto tb = tile_of(q->buffer, q->args, n.vars, k, j, kTensorTile, ncols);
  if (!tc || !ta || !tb) refuse(name, "does not access 64xN, 64x16 and 16xN tiles");
  TensorOp op;
  op.kind = TensorOpKind::Mma;
  op.unit = TensorUnit::Warpgroup;
  op.cols = ncols;
  op.frag = *tc;
  op.a = *ta;
  op.b = *tb;
  auto swizzle = loop->annotations.find(P::kWgmmaSwizzleAnnotation);
  if (swizzle != loop->annotations.end()) {
    const auto* bytes = std::get_if<int64_t>(&swizzle->second);
    if (!bytes || *bytes != 128)
      refuse(name, "asks for a swizzle other than 128 bytes (the only one written)");
    op.swizzle128 = true;
  }
  op.tma = loop->annotations.count(P::kWgmmaTmaAnnotation) > 0;
  op.producer = op.tma && loop->annotations.count(P::kWgmmaProducerAnnotation) > 0;
  return op;
}

// Whether an index expression is a multiple of 16 for every value of its variables.
bool multiple_of_tile(const P::Expr& e) {
  switch (e->kind) {
  case ExprKind::IntImm:
    return e->int_value % kTensorTile == 0;
  case ExprKind::Add:
  case ExprKind::Sub:
    return multiple_of_tile(e->args[0]) && multiple_of_tile(e->args[1]);
  case ExprKind::Mul:
    return multiple_of_tile(e->args[0]) || multiple_of_tile(e->args[1]);
  default:
    return false;
  }
}

} // namespace

bool is_fragment_scope(const std::string& scope) {
  return scope.rfind("wmma.", 0) == 0 || scope.rfind("wgmma.", 0) == 0;
}

TensorOp match_tensor_op(const P::Stmt& loop) {
  auto it = loop->annotations.find(P::kTensorIntrinsicAnnotation);
  const auto* name =
      it == loop->annotations.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (!name) throw UnsupportedError("a tensor intrinsic annotation that is not a name");
  TensorOp op;
  if (*name == "wmma.fill")
    op = match_fill(loop, *name);
  else if (*name == "wmma.load_a")
    op = match_load(loop, *name, true);
  else if (*name == "wmma.load_b")
    op = match_load(loop, *name, false);
  else if (*name == "wmma.mma")
    op = match_mma(loop, *name);
  else if (*name == "wmma.store")
    op = match_store(loop, *name);
  else if (*name == "wgmma.fill")
    op = match_group_fill(loop, *name);
  else if (*name == "wgmma.mma")
    op = match_group_mma(loop, *name);
  else if (*name == "wgmma.store")
    op = match_group_store(loop, *name);
  else
    throw UnsupportedError("unknown tensor intrinsic '" + *name + "'");
  op.name = *name;
  return op;
}

std::map<int64_t, FragmentInfo> fragment_infos(std::vector<TensorOp>& ops) {
  std::map<int64_t, FragmentInfo> out;
  std::map<int64_t, int> rows_along; // buffer id -> the dimension the matrix's rows run along
  auto claim = [&](const Tile& t, FragmentRole role, const TensorOp& op) {
    FragmentInfo info;
    info.role = role;
    info.unit = op.unit;
    info.cols = op.cols;
    info.count = t.buffer->num_elements() /
                 (op.unit == TensorUnit::Warp ? kTensorTile * kTensorTile : kGroupRows * op.cols);
    auto [at, fresh] = out.emplace(t.buffer->id, info);
    if (!fresh && at->second.role != role)
      throw UnsupportedError("the fragment '" + t.buffer->name + "' plays two roles");
    if (!fresh && (at->second.unit != op.unit || at->second.cols != op.cols))
      throw UnsupportedError("the accumulator '" + t.buffer->name +
                             "' is used by operations of different shapes");
    auto [r, first] = rows_along.emplace(t.buffer->id, t.row_dim);
    if (!first && r->second != t.row_dim)
      throw UnsupportedError("the fragment '" + t.buffer->name +
                             "' is multiplied along different dimensions");
  };
  for (const TensorOp& op : ops)
    if (op.kind == TensorOpKind::Mma) {
      // wgmma's operands are shared memory, not fragments.
      if (op.unit == TensorUnit::Warp) {
        claim(op.a, FragmentRole::MatrixA, op);
        claim(op.b, FragmentRole::MatrixB, op);
      }
      claim(op.frag, FragmentRole::Accumulator, op);
    }
  // A copy's tiles turned round, together, so that the fragment's rows are the matrix's.
  auto orient = [&](TensorOp& op) {
    if (op.unit == TensorUnit::Warpgroup) return; // the matchers settle a warpgroup's rows
    auto r = rows_along.find(op.frag.buffer->id);
    int rows = r != rows_along.end() ? r->second : std::min(op.frag.row_dim, op.frag.col_dim);
    if (op.frag.row_dim == rows) return;
    std::swap(op.frag.row_dim, op.frag.col_dim);
    if (op.mem.buffer) std::swap(op.mem.row_dim, op.mem.col_dim);
  };
  std::map<int64_t, int> layout; // buffer id -> 0 row-major, 1 column-major
  for (TensorOp& op : ops) {
    if (op.kind == TensorOpKind::Mma) continue;
    orient(op);
    if (op.kind == TensorOpKind::Fill || op.kind == TensorOpKind::Store) {
      claim(op.frag, FragmentRole::Accumulator, op);
      continue;
    }
    FragmentRole role =
        op.kind == TensorOpKind::LoadA ? FragmentRole::MatrixA : FragmentRole::MatrixB;
    auto at = out.find(op.frag.buffer->id);
    if (at == out.end())
      throw UnsupportedError("the fragment '" + op.frag.buffer->name +
                             "' is loaded but no multiply-accumulate reads it");
    if (at->second.role != role)
      throw UnsupportedError("the fragment '" + op.frag.buffer->name +
                             "' is loaded as the other operand than its mma reads");
    int col_major = memory_layout(op.mem).col_major ? 1 : 0;
    auto [l, fresh] = layout.emplace(op.frag.buffer->id, col_major);
    if (!fresh && l->second != col_major)
      throw UnsupportedError("the fragment '" + op.frag.buffer->name +
                             "' is loaded row-major and column-major");
    at->second.col_major = col_major != 0;
  }
  return out;
}

MemoryLayout memory_layout(const Tile& mem) {
  const auto& shape = mem.buffer->shape;
  const int last = static_cast<int>(shape.size()) - 1;
  auto stride = [&](int d) {
    int64_t s = 1;
    for (int x = d + 1; x <= last; ++x)
      s *= shape[static_cast<size_t>(x)];
    return s;
  };
  if (mem.col_dim == last) return {false, stride(mem.row_dim)};
  if (mem.row_dim == last) return {true, stride(mem.col_dim)};
  throw UnsupportedError("the tile of '" + mem.buffer->name +
                         "' runs along neither its innermost dimension");
}

bool memory_tile_aligned(const Tile& mem) {
  const auto& shape = mem.buffer->shape;
  P::Expr flat = P::int_imm(0);
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * P::int_imm(shape[d]) + mem.base[d];
  int64_t ld = memory_layout(mem).ld;
  return multiple_of_tile(flat) && (ld * mem.buffer->dtype.bytes()) % 16 == 0;
}

P::Expr fragment_index(const Tile& frag) {
  const auto& shape = frag.buffer->shape;
  P::Expr flat = P::int_imm(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    bool matrix = static_cast<int>(d) == frag.row_dim || static_cast<int>(d) == frag.col_dim;
    if (matrix && (shape[d] % kTensorTile != 0 || !multiple_of_tile(frag.base[d])))
      throw UnsupportedError("the fragment '" + frag.buffer->name +
                             "' is not accessed at whole 16x16 tiles");
    int64_t extent = matrix ? shape[d] / kTensorTile : shape[d];
    P::Expr at = matrix ? frag.base[d] / P::int_imm(kTensorTile) : frag.base[d];
    flat = flat * P::int_imm(extent) + at;
  }
  return flat;
}

} // namespace mt::gpu_codegen

namespace mt::gpu_codegen {

std::map<int64_t, CoreMatrixLayout> core_matrix_operands(const std::vector<TensorOp>& ops) {
  std::map<int64_t, CoreMatrixLayout> out;
  for (const TensorOp& op : ops) {
    if (op.unit != TensorUnit::Warpgroup || op.kind != TensorOpKind::Mma) continue;
    for (const Tile* t : {&op.a, &op.b}) {
      const auto& shape = t->buffer->shape;
      const size_t nd = shape.size();
      if (nd < 2 || shape[nd - 1] % 8 || shape[nd - 2] % 8)
        throw UnsupportedError("the wgmma operand '" + t->buffer->name +
                               "' is not [.., 8r, 8c]: it cannot be held as core matrices");
      // The tile must run along the last two dimensions and start on a core matrix.
      const int last = static_cast<int>(nd) - 1;
      if (!((t->row_dim == last && t->col_dim == last - 1) ||
            (t->row_dim == last - 1 && t->col_dim == last)))
        throw UnsupportedError("a wgmma tile of '" + t->buffer->name +
                               "' that does not run along its last two dimensions");
      const bool whole_lines = shape[nd - 1] * t->buffer->dtype.bytes() % 128 == 0;
      const CoreMatrixLayout layout = op.swizzle128 && whole_lines ? CoreMatrixLayout::Swizzle128
                                                                   : CoreMatrixLayout::Interleaved;
      auto [at, fresh] = out.emplace(t->buffer->id, layout);
      if (!fresh && at->second != layout)
        throw UnsupportedError("the wgmma operand '" + t->buffer->name +
                               "' is read by products that want it swizzled and not");
    }
  }
  return out;
}

namespace {

// a ^ b for a, b in [0, 8), in the operations the program's expressions have: bit i of the sum
// of a >> i and b >> i is the exclusive or of their bits i (the higher bits add even numbers).
// The vector-copy analysis sees through it: neither operand moves with a lane.
P::Expr xor3(const P::Expr& a, const P::Expr& b) {
  P::Expr out;
  for (int64_t bit = 1; bit <= 4; bit *= 2) {
    P::Expr sum = bit == 1 ? a + b : a / P::int_imm(bit) + b / P::int_imm(bit);
    P::Expr term = (sum % P::int_imm(2)) * P::int_imm(bit);
    out = out ? out + term : term;
  }
  return out;
}

} // namespace

P::Expr core_matrix_offset(const P::BufferNode& buffer, const std::vector<P::Expr>& indices,
                           CoreMatrixLayout layout) {
  const auto& shape = buffer.shape;
  const size_t nd = shape.size();
  const int64_t R = shape[nd - 2], C = shape[nd - 1];
  const P::Expr& r = indices[nd - 2];
  const P::Expr& c = indices[nd - 1];
  const P::Expr eight = P::int_imm(8);
  // Kept in these shapes (no canonical form): the vector-copy analysis follows a lane through
  // the divisions and remainders by 8 (vector_copy.h).
  P::Expr offset;
  if (layout == CoreMatrixLayout::Swizzle128) {
    const int64_t line = 128 / buffer.dtype.bytes(); // elements in a row of an atom
    P::Expr chunk = xor3((c % P::int_imm(line)) / eight, r % eight);
    offset = (c / P::int_imm(line)) * P::int_imm(R * line) + (r / eight) * P::int_imm(8 * line) +
             (r % eight) * P::int_imm(line) + chunk * eight + c % eight;
  } else {
    P::Expr core = (r / eight) * P::int_imm(C / 8) + c / eight;
    offset = core * P::int_imm(64) + ((r % eight) * eight + c % eight);
  }
  if (nd == 2) return offset;
  P::Expr outer = indices[0];
  for (size_t d = 1; d + 2 < nd; ++d)
    outer = outer * P::int_imm(shape[d]) + indices[d];
  return outer * P::int_imm(R * C) + offset;
}

GroupOperand group_operand(const Tile& t, bool is_a, CoreMatrixLayout layout) {
  const auto& shape = t.buffer->shape;
  const int last = static_cast<int>(shape.size()) - 1;
  const int64_t R = shape[static_cast<size_t>(last - 1)], C = shape[static_cast<size_t>(last)];
  const int64_t bytes = t.buffer->dtype.bytes();
  // A's k is its tile's columns, B's its rows.
  const int k_dim = is_a ? t.col_dim : t.row_dim;
  GroupOperand g;
  g.k_major = k_dim == last;
  if (layout == CoreMatrixLayout::Swizzle128) {
    g.swizzle128 = true;
    // The next atom down the rows (8 rows of m or n when K-major, of k when MN-major); K-major
    // reads no leading offset (a k16 step stays inside a 128-byte line), MN-major's is the
    // next 64-column block along m or n.
    g.sbo_bytes = 1024;
    g.lbo_bytes = g.k_major ? 16 : R * 128;
    return g;
  }
  const int64_t along_cols = 8 * bytes * 8, along_rows = C * 8 * bytes; // 128 B, C*16 B
  g.lbo_bytes = g.k_major ? along_cols : along_rows;
  g.sbo_bytes = g.k_major ? along_rows : along_cols;
  return g;
}

} // namespace mt::gpu_codegen
