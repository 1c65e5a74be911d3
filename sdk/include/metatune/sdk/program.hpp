// The lowered loop program as a plain C++ tree, for target plugins. A target never sees core's
// IR: the SDK walks the host's read-only accessors once and builds this tree, which the code
// generator then owns outright. It mirrors core/ir after lowering (no blocks): For / Seq /
// Store / IfThenElse / Allocate statements over scalar expressions and row-major buffers.
// Header-only, standard library and the ABI's vocabulary lists only (plain C, no host table), so
// that it can be used (and tested) without the host.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "metatune/plugin_api/ir_vocabulary.h"

namespace mt::sdk::program {

// ---- element types ----------------------------------------------------------------------------

// Int, UInt, Float, BFloat, Bool: numbered by position in the ABI's list MT_DTYPE_KINDS, as
// core's mt::DTypeKind is; the ABI's DLPack code is to_dtype_code / from_dtype_code.
enum class DTypeKind : uint8_t { MT_DTYPE_KINDS(MT_VOCAB_POSITIONAL_ENUMERATOR) };

inline mt_dtype_code to_dtype_code(DTypeKind k) {
  return mt_dtype_code_at(static_cast<int>(k));
}
// false for a code the ABI does not know.
inline bool from_dtype_code(mt_dtype_code code, DTypeKind* out) {
  int position = mt_dtype_code_position(code);
  if (position < 0) return false;
  *out = static_cast<DTypeKind>(position);
  return true;
}
// The name prefix of a kind: "i", "u", "f", "bf", "bool".
inline const char* to_string(DTypeKind k) {
  const char* text = mt_dtype_code_text(to_dtype_code(k));
  return text ? text : "?";
}

// Scalar element type: kind + bit width. Same encoding as core's mt::DType.
struct DType {
  DTypeKind kind = DTypeKind::Float;
  uint8_t bits = 32;

  constexpr bool is_float() const { return kind == DTypeKind::Float || kind == DTypeKind::BFloat; }
  constexpr bool is_int() const { return kind == DTypeKind::Int || kind == DTypeKind::UInt; }
  constexpr bool is_signed_int() const { return kind == DTypeKind::Int; }
  constexpr bool is_bool() const { return kind == DTypeKind::Bool; }
  constexpr int bytes() const { return bits <= 8 ? 1 : bits / 8; }
  friend constexpr bool operator==(DType a, DType b) {
    return a.kind == b.kind && a.bits == b.bits;
  }

  static constexpr DType f32() { return {DTypeKind::Float, 32}; }
  static constexpr DType f64() { return {DTypeKind::Float, 64}; }
  static constexpr DType f16() { return {DTypeKind::Float, 16}; }
  static constexpr DType bf16() { return {DTypeKind::BFloat, 16}; }
  static constexpr DType i8() { return {DTypeKind::Int, 8}; }
  static constexpr DType u8() { return {DTypeKind::UInt, 8}; }
  static constexpr DType i16() { return {DTypeKind::Int, 16}; }
  static constexpr DType i32() { return {DTypeKind::Int, 32}; }
  static constexpr DType i64() { return {DTypeKind::Int, 64}; }
  static constexpr DType boolean() { return {DTypeKind::Bool, 1}; }
  // Loop variables and buffer indices are always i64.
  static constexpr DType index() { return i64(); }
};

inline std::string to_string(DType t) {
  if (t.kind == DTypeKind::Bool) return to_string(t.kind);
  return to_string(t.kind) + std::to_string(t.bits);
}

// ---- expressions ------------------------------------------------------------------------------

// Members, values and operands as listed in MT_EXPR_KINDS and MT_MATH_FNS
// (plugin_api/ir_vocabulary.h), the same lists core's mt::ExprKind and mt::MathFn are made of.
enum class ExprKind : uint8_t { MT_EXPR_KINDS(MT_VOCAB_ENUMERATOR) };
enum class MathFn : uint8_t { MT_MATH_FNS(MT_VOCAB_ENUMERATOR) };

inline const char* to_string(MathFn f) {
  const char* text = mt_math_fn_text(static_cast<mt_math_fn>(f));
  return text ? text : "?";
}
inline int math_fn_arity(MathFn f) {
  return mt_math_fn_arity(static_cast<mt_math_fn>(f));
}

inline const char* to_string(ExprKind k) {
  const char* text = mt_expr_kind_text(static_cast<mt_expr_kind>(k));
  return text ? text : "?";
}
inline bool is_binary(ExprKind k) {
  return k >= ExprKind::Add && k <= ExprKind::Or;
}
inline bool is_comparison(ExprKind k) {
  return k >= ExprKind::EQ && k <= ExprKind::GE;
}

// A buffer: row-major, statically shaped. `id` is unique within a Program (identity is by id;
// two buffers may share a name). Scope: "global" (parameters), "local", "shared", "cache" ...
struct BufferNode {
  int64_t id = 0;
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string scope = "global";

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  int64_t size_bytes() const { return num_elements() * dtype.bytes(); }
};
using Buffer = std::shared_ptr<const BufferNode>;

struct ExprNode;

// Value-style handle to an immutable expression node; null means "no expression".
class Expr {
public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  // Literals convert implicitly so that builders read naturally: `i * 4 + 1`.
  Expr(int v);
  Expr(int64_t v);
  Expr(double v);

  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }
  explicit operator bool() const { return node_ != nullptr; }
  bool same_as(const Expr& o) const { return node_ == o.node_; }

private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::IntImm;
  DType dtype;
  int64_t int_value = 0;   // IntImm (also the value of a Bool immediate: 0/1)
  double float_value = 0;  // FloatImm
  int64_t var_id = 0;      // Var: unique within a Program; identity of the variable
  std::string name;        // Var (for printing only)
  MathFn fn = MathFn::Exp; // Call
  Buffer buffer;           // Load
  std::vector<Expr> args;
};

// ---- statements -------------------------------------------------------------------------------

enum class StmtKind : uint8_t { For, Seq, Store, IfThenElse, Allocate };
// Members and values from MT_FOR_KINDS (plugin_api/ir_vocabulary.h), as core's mt::ForKind.
enum class ForKind : uint8_t { MT_FOR_KINDS(MT_VOCAB_ENUMERATOR) };

inline const char* to_string(ForKind k) {
  const char* text = mt_for_kind_text(static_cast<mt_for_kind>(k));
  return text ? text : "?";
}

using AnnValue = std::variant<int64_t, std::string>;
using Annotations = std::map<std::string, AnnValue>;

// Loop annotation: lowering's automatic unrolling asks for this serial loop to be unrolled by
// hint (the ABI's MT_LOOP_UNROLL_HINT; program_builder.hpp checks that they agree). Explicit
// requests arrive as ForKind::Unrolled loops instead.
inline constexpr const char* kUnrollHintAnnotation = "pragma_unroll_hint";

// Loop annotation: the nest under this loop is one warp-wide tensor-core operation (a rule
// tiled it to the operation's shape; the GPU generator checks that it is and emits the
// instruction, or runs the loops as they are where the dialect has none). The values, all
// WMMA's 16x16x16 shape with f16 (or bf16) operands and an f32 accumulator ("wmma.*" scopes):
//   wmma.fill   acc[16x16] = constant         wmma.load_a / wmma.load_b  frag[16x16] = memory
//   wmma.mma    acc += f32(a) * f32(b)        wmma.store  memory[16x16] = acc
inline constexpr const char* kTensorIntrinsicAnnotation = "meta_schedule.tensor_intrinsic";
// Loop annotation next to a "wgmma.mma" tensor intrinsic: 128 asks for the operands whose rows
// are whole 128-byte lines to be held in the 128-byte swizzled layout (the generator's
// tensor_op.h); absent, they are held as plain 8x8 core matrices.
inline constexpr const char* kWgmmaSwizzleAnnotation = "meta_schedule.wgmma_swizzle";
// Loop annotation next to kWgmmaSwizzleAnnotation: 1 asks for the pipelined fetches of the
// swizzled operands to be copies by Hopper's tensor memory accelerator (TMA: one thread issues
// a box copy that lays the tile out swizzled itself; the generator's tma_copy.h), where the
// target has it; elsewhere they stay the threads' own copies.
inline constexpr const char* kWgmmaTmaAnnotation = "meta_schedule.wgmma_tma";
// Loop annotation next to kWgmmaTmaAnnotation: 1 asks for the TMA copies to be issued by a
// warpgroup of their own (a producer, launched after the block's warpgroups), which hands each
// tile to the others (the consumers) through full/empty mbarriers instead of block barriers;
// where the generator cannot, the copies stay the block's own.
inline constexpr const char* kWgmmaProducerAnnotation = "meta_schedule.wgmma_producer";

// Loop annotations of software pipelining (the ABI's MT_LOOP_SOFTWARE_PIPELINE_*, which says
// what the lowered loops look like): a rule asks with kSoftwarePipelineStages = S on a k loop;
// lowering leaves it on the pipelined loop, kSoftwarePipelinePrologue on the prologue, and
// kSoftwarePipelineAsyncCopy on each fetch nest that a GPU may copy asynchronously.
inline constexpr const char* kSoftwarePipelineStages = "software_pipeline_stages";
inline constexpr const char* kSoftwarePipelinePrologue = "software_pipeline_prologue";
inline constexpr const char* kSoftwarePipelineAsyncCopy = "software_pipeline_async_copy";
// Slots beyond the stages (the ABI's MT_LOOP_SOFTWARE_PIPELINE_SPARE_SLOTS): a fetch overwrites
// the slot read n+1 iterations before, for consumers that read asynchronously.
inline constexpr const char* kSoftwarePipelineSpareSlots = "software_pipeline_spare_slots";

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

// One struct for every statement kind; the fields a kind does not use stay empty.
struct StmtNode {
  StmtKind kind = StmtKind::Seq;

  // For: for loop_var in [0, extent)
  Expr loop_var; // a Var of dtype i64
  int64_t extent = 0;
  ForKind for_kind = ForKind::Serial;
  std::string thread_tag; // ThreadBinding only: "blockIdx.x", "threadIdx.y", ...
  Annotations annotations;

  // For / Allocate: body
  Stmt body;

  // Seq
  std::vector<Stmt> stmts;

  // Store (buffer[indices] = value) and Allocate (storage of `buffer` for the duration of body)
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;

  // IfThenElse
  Expr condition;
  Stmt then_case;
  Stmt else_case; // may be null
};

// A lowered function: `params` in calling-convention order (each a buffer passed as a raw
// pointer to its first element), and a body.
struct Program {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
};

// ---- constructors -----------------------------------------------------------------------------

namespace detail {

inline std::shared_ptr<ExprNode> new_expr(ExprKind k, DType t) {
  auto n = std::make_shared<ExprNode>();
  n->kind = k;
  n->dtype = t;
  return n;
}

// Ids for variables and buffers made by the constructors below. Builders that mirror another
// IR (the SDK's accessor walk) may pass their own ids instead; ids only need to be unique
// within one Program.
inline int64_t next_id() {
  static std::atomic<int64_t> counter{1};
  return counter.fetch_add(1);
}

inline bool is_imm(const Expr& e) {
  return e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm;
}

} // namespace detail

inline Expr int_imm(int64_t v, DType t = DType::index()) {
  auto n = detail::new_expr(ExprKind::IntImm, t);
  n->int_value = v;
  return Expr(n);
}

inline Expr float_imm(double v, DType t = DType::f32()) {
  auto n = detail::new_expr(ExprKind::FloatImm, t);
  n->float_value = v;
  return Expr(n);
}

inline Expr bool_imm(bool v) {
  return int_imm(v ? 1 : 0, DType::boolean());
}

// id < 0: a fresh id from the process-wide counter.
inline Expr make_var(std::string name, DType t = DType::index(), int64_t id = -1) {
  auto n = detail::new_expr(ExprKind::Var, t);
  n->name = std::move(name);
  n->var_id = id < 0 ? detail::next_id() : id;
  return Expr(n);
}

inline Expr::Expr(int v) : Expr(int_imm(v)) {}
inline Expr::Expr(int64_t v) : Expr(int_imm(v)) {}
inline Expr::Expr(double v) : Expr(float_imm(v)) {}

inline Buffer make_buffer(std::string name, DType dtype, std::vector<int64_t> shape,
                          std::string scope = "global", int64_t id = -1) {
  auto b = std::make_shared<BufferNode>();
  b->id = id < 0 ? detail::next_id() : id;
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = std::move(scope);
  return b;
}

namespace detail {
// An immediate operand takes the type of the other operand, so that `x * 2` works for floats.
inline Expr coerce(const Expr& lit, DType t) {
  if (lit->dtype == t) return lit;
  if (lit->kind == ExprKind::IntImm) {
    if (t.is_float()) return float_imm(static_cast<double>(lit->int_value), t);
    if (t.is_int() || t.is_bool()) return int_imm(lit->int_value, t);
  }
  if (lit->kind == ExprKind::FloatImm && t.is_float()) return float_imm(lit->float_value, t);
  return lit;
}
} // namespace detail

inline Expr make_binary(ExprKind kind, Expr a, Expr b) {
  if (!a || !b) throw std::invalid_argument("program::make_binary: null operand");
  if (!(a->dtype == b->dtype)) {
    if (detail::is_imm(a))
      a = detail::coerce(a, b->dtype);
    else if (detail::is_imm(b))
      b = detail::coerce(b, a->dtype);
  }
  if (!(a->dtype == b->dtype))
    throw std::invalid_argument(std::string("program: type mismatch in '") + to_string(kind) +
                                "': " + to_string(a->dtype) + " vs " + to_string(b->dtype));
  DType t = a->dtype;
  if (kind == ExprKind::Div && t.is_int()) kind = ExprKind::FloorDiv;
  if (is_comparison(kind) || kind == ExprKind::And || kind == ExprKind::Or) t = DType::boolean();
  auto n = detail::new_expr(kind, t);
  n->args = {std::move(a), std::move(b)};
  return Expr(n);
}

inline Expr make_not(Expr a) {
  auto n = detail::new_expr(ExprKind::Not, DType::boolean());
  n->args = {std::move(a)};
  return Expr(n);
}

inline Expr make_select(Expr c, Expr t, Expr f) {
  if (!(t->dtype == f->dtype)) {
    if (detail::is_imm(t))
      t = detail::coerce(t, f->dtype);
    else if (detail::is_imm(f))
      f = detail::coerce(f, t->dtype);
  }
  if (!(t->dtype == f->dtype)) throw std::invalid_argument("program::select: branch types differ");
  auto n = detail::new_expr(ExprKind::Select, t->dtype);
  n->args = {std::move(c), std::move(t), std::move(f)};
  return Expr(n);
}

inline Expr make_cast(DType t, Expr v) {
  if (v->dtype == t) return v;
  auto n = detail::new_expr(ExprKind::Cast, t);
  n->args = {std::move(v)};
  return Expr(n);
}

inline Expr make_load(Buffer buf, std::vector<Expr> indices) {
  if (!buf) throw std::invalid_argument("program::make_load: null buffer");
  if (indices.size() != buf->shape.size())
    throw std::invalid_argument("program: load of " + buf->name + " has " +
                                std::to_string(indices.size()) + " indices for rank " +
                                std::to_string(buf->shape.size()));
  for (auto& i : indices)
    i = detail::coerce(i, DType::index());
  auto n = detail::new_expr(ExprKind::Load, buf->dtype);
  n->buffer = std::move(buf);
  n->args = std::move(indices);
  return Expr(n);
}

inline Expr make_call(MathFn fn, std::vector<Expr> args) {
  if (static_cast<int>(args.size()) != math_fn_arity(fn))
    throw std::invalid_argument(std::string("program: ") + to_string(fn) + " takes " +
                                std::to_string(math_fn_arity(fn)) + " arguments");
  DType t = args[0]->dtype;
  for (auto& a : args)
    a = detail::coerce(a, t);
  auto n = detail::new_expr(ExprKind::Call, t);
  n->fn = fn;
  n->args = std::move(args);
  return Expr(n);
}

inline Expr operator+(Expr a, Expr b) {
  return make_binary(ExprKind::Add, a, b);
}
inline Expr operator-(Expr a, Expr b) {
  return make_binary(ExprKind::Sub, a, b);
}
inline Expr operator*(Expr a, Expr b) {
  return make_binary(ExprKind::Mul, a, b);
}
// float: true division; int: floor division
inline Expr operator/(Expr a, Expr b) {
  return make_binary(ExprKind::Div, a, b);
}
inline Expr operator%(Expr a, Expr b) {
  return make_binary(ExprKind::FloorMod, a, b);
}
inline Expr operator-(Expr a) {
  return make_binary(ExprKind::Sub, detail::coerce(int_imm(0), a->dtype), a);
}
inline Expr operator<(Expr a, Expr b) {
  return make_binary(ExprKind::LT, a, b);
}
inline Expr operator<=(Expr a, Expr b) {
  return make_binary(ExprKind::LE, a, b);
}
inline Expr operator>(Expr a, Expr b) {
  return make_binary(ExprKind::GT, a, b);
}
inline Expr operator>=(Expr a, Expr b) {
  return make_binary(ExprKind::GE, a, b);
}
inline Expr operator&&(Expr a, Expr b) {
  return make_binary(ExprKind::And, a, b);
}
inline Expr operator||(Expr a, Expr b) {
  return make_binary(ExprKind::Or, a, b);
}
inline Expr eq(Expr a, Expr b) {
  return make_binary(ExprKind::EQ, a, b);
}
inline Expr ne(Expr a, Expr b) {
  return make_binary(ExprKind::NE, a, b);
}
inline Expr min(Expr a, Expr b) {
  return make_binary(ExprKind::Min, a, b);
}
inline Expr max(Expr a, Expr b) {
  return make_binary(ExprKind::Max, a, b);
}
inline Expr floordiv(Expr a, Expr b) {
  return make_binary(ExprKind::FloorDiv, a, b);
}
inline Expr floormod(Expr a, Expr b) {
  return make_binary(ExprKind::FloorMod, a, b);
}
inline Expr call(MathFn fn, Expr a) {
  return make_call(fn, {std::move(a)});
}
inline Expr pow(Expr a, Expr b) {
  return make_call(MathFn::Pow, {std::move(a), std::move(b)});
}

inline Stmt make_for(Expr var, int64_t extent, Stmt body, ForKind kind = ForKind::Serial,
                     Annotations ann = {}, std::string thread_tag = {}) {
  if (!var || var->kind != ExprKind::Var)
    throw std::invalid_argument("program::make_for: loop variable is not a Var");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::For;
  s->loop_var = std::move(var);
  s->extent = extent;
  s->for_kind = kind;
  s->annotations = std::move(ann);
  s->thread_tag = std::move(thread_tag);
  s->body = std::move(body);
  return s;
}

// Flattens nested Seq, drops nulls, unwraps a single statement.
inline Stmt make_seq(std::vector<Stmt> stmts) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Seq;
  for (auto& x : stmts) {
    if (!x) continue;
    if (x->kind == StmtKind::Seq)
      s->stmts.insert(s->stmts.end(), x->stmts.begin(), x->stmts.end());
    else
      s->stmts.push_back(std::move(x));
  }
  if (s->stmts.size() == 1) return s->stmts[0];
  return s;
}

inline Stmt make_store(Buffer buf, std::vector<Expr> indices, Expr value) {
  if (!buf) throw std::invalid_argument("program::make_store: null buffer");
  if (indices.size() != buf->shape.size())
    throw std::invalid_argument("program: store to " + buf->name + " has " +
                                std::to_string(indices.size()) + " indices for rank " +
                                std::to_string(buf->shape.size()));
  for (auto& i : indices)
    i = detail::coerce(i, DType::index());
  value = detail::coerce(value, buf->dtype);
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Store;
  s->buffer = std::move(buf);
  s->indices = std::move(indices);
  s->value = std::move(value);
  return s;
}

inline Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::IfThenElse;
  s->condition = std::move(cond);
  s->then_case = std::move(then_case);
  s->else_case = std::move(else_case);
  return s;
}

inline Stmt make_allocate(Buffer buf, Stmt body) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Allocate;
  s->buffer = std::move(buf);
  s->body = std::move(body);
  return s;
}

inline bool is_const_int(const Expr& e, int64_t* value = nullptr) {
  if (!e || e->kind != ExprKind::IntImm || !e->dtype.is_int()) return false;
  if (value) *value = e->int_value;
  return true;
}

// ---- traversal and printing -------------------------------------------------------------------

inline void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (!e) return;
  for (const auto& a : e->args)
    post_order_visit(a, f);
  f(e);
}

inline bool uses_var(const Expr& e, int64_t var_id) {
  bool found = false;
  post_order_visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var && x->var_id == var_id) found = true;
  });
  return found;
}

// Pre-order visit of statements; returning false from `f` skips the children.
inline void visit_stmts(const Stmt& s, const std::function<bool(const Stmt&)>& f) {
  if (!s || !f(s)) return;
  switch (s->kind) {
  case StmtKind::For:
  case StmtKind::Allocate:
    visit_stmts(s->body, f);
    break;
  case StmtKind::Seq:
    for (const auto& x : s->stmts)
      visit_stmts(x, f);
    break;
  case StmtKind::IfThenElse:
    visit_stmts(s->then_case, f);
    visit_stmts(s->else_case, f);
    break;
  case StmtKind::Store:
    break;
  }
}

// Which params the body stores to (outputs), in param order.
inline std::vector<bool> output_mask(const Program& p) {
  std::unordered_set<int64_t> written;
  visit_stmts(p.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::Store) written.insert(s->buffer->id);
    return true;
  });
  std::vector<bool> mask;
  for (const auto& b : p.params)
    mask.push_back(written.count(b->id) != 0);
  return mask;
}

// Buffers the body loads or stores that are neither params nor allocated by an Allocate, in
// order of first use (lowering can leave such intermediates; the reference interpreter gives
// them storage for the whole call).
inline std::vector<Buffer> free_buffers(const Program& p) {
  std::unordered_set<int64_t> declared, seen;
  for (const auto& b : p.params)
    declared.insert(b->id);
  std::vector<Buffer> used;
  auto note = [&](const Buffer& b) {
    if (seen.insert(b->id).second) used.push_back(b);
  };
  auto note_expr = [&](const Expr& e) {
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load) note(x->buffer);
    });
  };
  visit_stmts(p.body, [&](const Stmt& s) {
    switch (s->kind) {
    case StmtKind::Allocate:
      declared.insert(s->buffer->id);
      break;
    case StmtKind::Store:
      note(s->buffer);
      for (const auto& i : s->indices)
        note_expr(i);
      note_expr(s->value);
      break;
    case StmtKind::IfThenElse:
      note_expr(s->condition);
      break;
    default:
      break;
    }
    return true;
  });
  std::vector<Buffer> out;
  for (const auto& b : used)
    if (!declared.count(b->id)) out.push_back(b);
  return out;
}

// The program with its free buffers allocated around the whole body.
inline Program with_free_buffers_allocated(Program p) {
  for (const auto& b : free_buffers(p))
    p.body = make_allocate(b, p.body);
  return p;
}

inline std::string to_string(const Expr& e) {
  if (!e) return "<null>";
  std::ostringstream os;
  switch (e->kind) {
  case ExprKind::IntImm:
    if (e->dtype.is_bool()) return e->int_value ? "true" : "false";
    os << e->int_value;
    if (!(e->dtype == DType::index())) os << to_string(e->dtype);
    return os.str();
  case ExprKind::FloatImm:
    os << e->float_value;
    if (!(e->dtype == DType::f32())) os << to_string(e->dtype);
    return os.str();
  case ExprKind::Var:
    return e->name.empty() ? "v" + std::to_string(e->var_id) : e->name;
  case ExprKind::Not:
    return "!(" + to_string(e->args[0]) + ")";
  case ExprKind::Min:
  case ExprKind::Max:
    return std::string(to_string(e->kind)) + "(" + to_string(e->args[0]) + ", " +
           to_string(e->args[1]) + ")";
  case ExprKind::Select:
    return "select(" + to_string(e->args[0]) + ", " + to_string(e->args[1]) + ", " +
           to_string(e->args[2]) + ")";
  case ExprKind::Cast:
    return to_string(e->dtype) + "(" + to_string(e->args[0]) + ")";
  case ExprKind::Load: {
    os << e->buffer->name << "[";
    for (size_t i = 0; i < e->args.size(); ++i)
      os << (i ? ", " : "") << to_string(e->args[i]);
    os << "]";
    return os.str();
  }
  case ExprKind::Call: {
    os << to_string(e->fn) << "(";
    for (size_t i = 0; i < e->args.size(); ++i)
      os << (i ? ", " : "") << to_string(e->args[i]);
    os << ")";
    return os.str();
  }
  default:
    return "(" + to_string(e->args[0]) + " " + to_string(e->kind) + " " + to_string(e->args[1]) +
           ")";
  }
}

inline void print_stmt(std::ostream& os, const Stmt& s, int indent) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (!s) return;
  switch (s->kind) {
  case StmtKind::For:
    os << pad << "for " << to_string(s->loop_var) << " in " << s->extent;
    if (s->for_kind != ForKind::Serial) os << " " << to_string(s->for_kind);
    if (!s->thread_tag.empty()) os << " \"" << s->thread_tag << "\"";
    for (const auto& [k, v] : s->annotations) {
      os << " @" << k << "=";
      if (std::holds_alternative<int64_t>(v))
        os << std::get<int64_t>(v);
      else
        os << '"' << std::get<std::string>(v) << '"';
    }
    os << ":\n";
    print_stmt(os, s->body, indent + 1);
    break;
  case StmtKind::Seq:
    for (const auto& x : s->stmts)
      print_stmt(os, x, indent);
    break;
  case StmtKind::Store:
    os << pad << s->buffer->name << "[";
    for (size_t i = 0; i < s->indices.size(); ++i)
      os << (i ? ", " : "") << to_string(s->indices[i]);
    os << "] = " << to_string(s->value) << "\n";
    break;
  case StmtKind::IfThenElse:
    os << pad << "if " << to_string(s->condition) << ":\n";
    print_stmt(os, s->then_case, indent + 1);
    if (s->else_case) {
      os << pad << "else:\n";
      print_stmt(os, s->else_case, indent + 1);
    }
    break;
  case StmtKind::Allocate:
    os << pad << "allocate " << s->buffer->name << ": " << to_string(s->buffer->dtype) << "[";
    for (size_t i = 0; i < s->buffer->shape.size(); ++i)
      os << (i ? ", " : "") << s->buffer->shape[i];
    os << "] " << s->buffer->scope << "\n";
    print_stmt(os, s->body, indent + 1);
    break;
  }
}

inline std::string to_string(const Stmt& s) {
  std::ostringstream os;
  print_stmt(os, s, 0);
  return os.str();
}

inline std::string to_string(const Program& p) {
  std::ostringstream os;
  os << "def " << p.name << "(";
  for (size_t i = 0; i < p.params.size(); ++i) {
    const auto& b = p.params[i];
    os << (i ? ", " : "") << b->name << ": " << to_string(b->dtype) << "[";
    for (size_t d = 0; d < b->shape.size(); ++d)
      os << (d ? ", " : "") << b->shape[d];
    os << "]";
  }
  os << "):\n";
  print_stmt(os, p.body, 1);
  return os.str();
}

} // namespace mt::sdk::program
