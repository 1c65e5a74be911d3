// Tensor IR expressions: immutable, reference-counted nodes shared between functions.
// Variables are identified by node identity (two vars with the same name are different);
// structural comparison is done by the printer-based functions in structural.h.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ir/dtype.h"

namespace mt {

struct BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

// The members, their values and their operands are listed in MT_EXPR_KINDS and MT_MATH_FNS
// (plugin_api/ir_vocabulary.h); the values are the ABI's.
enum class ExprKind : uint8_t { MT_EXPR_KINDS(MT_VOCAB_ENUMERATOR) };
enum class MathFn : uint8_t { MT_MATH_FNS(MT_VOCAB_ENUMERATOR) };
const char* to_string(MathFn f);
bool parse_math_fn(std::string_view s, MathFn* out);
int math_fn_arity(MathFn f);

const char* to_string(ExprKind k);
bool is_binary(ExprKind k);
bool is_comparison(ExprKind k);

struct ExprNode;

// Value-style handle; null means "no expression" (e.g. an absent predicate).
class Expr {
public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  // Implicit from integer/float literals so that builders read naturally: `i * 4 + 1`.
  // (Templates so that `bool` never converts: `e && flag` must not build an IR And.)
  template <typename T>
    requires std::same_as<T, int> || std::same_as<T, long> || std::same_as<T, long long>
  Expr(T v) : Expr(from_int(static_cast<int64_t>(v))) {}
  template <typename T>
    requires std::same_as<T, double>
  Expr(T v) : Expr(from_float(v)) {}

  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }
  explicit operator bool() const { return node_ != nullptr; }
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }

private:
  static Expr from_int(int64_t v);
  static Expr from_float(double v);
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind;
  DType dtype;
  int64_t int_value = 0;   // IntImm
  double float_value = 0;  // FloatImm
  std::string name;        // Var
  MathFn fn = MathFn::Exp; // Call
  Buffer buffer;           // Load
  std::vector<Expr> args;
};

// ---- constructors -------------------------------------------------------------------------
Expr int_imm(int64_t v, DType t = DType::index());
Expr float_imm(double v, DType t = DType::f32());
Expr make_var(std::string name, DType t = DType::index());
// Builds a node of `kind` with type inference and constant folding of immediate operands.
Expr make_binary(ExprKind kind, Expr a, Expr b);
Expr make_not(Expr a);
Expr make_select(Expr c, Expr t, Expr f);
Expr make_cast(DType t, Expr v);
Expr make_load(Buffer buf, std::vector<Expr> indices);
Expr make_call(MathFn fn, std::vector<Expr> args);
// Same node with new operands (kind, dtype, payload kept); returns `e` itself if unchanged.
Expr with_args(const Expr& e, std::vector<Expr> args);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b); // float: true division; int: floor division
Expr operator%(Expr a, Expr b); // int: floor modulo
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr exp(Expr a);
Expr log(Expr a);
Expr tanh(Expr a);
Expr erf(Expr a);
Expr sqrt(Expr a);
Expr rsqrt(Expr a);
Expr pow(Expr a, Expr b);
Expr abs(Expr a);
Expr sigmoid(Expr a);

// ---- queries ----------------------------------------------------------------------------------
bool is_const_int(const Expr& e, int64_t* value = nullptr);
bool is_const_int_value(const Expr& e, int64_t value);
template <std::integral T> bool is_const_int(const Expr& e, T value) {
  return is_const_int_value(e, static_cast<int64_t>(value));
}
bool is_var(const Expr& e);

// Lowest and highest finite value of a dtype as a float immediate (used as max/min identities).
Expr min_value(DType t);
Expr max_value(DType t);

// ---- traversal --------------------------------------------------------------------------------
// Whether the node's handle is held more than once: a node reached through several parents of
// a DAG (or also held elsewhere). Walks that must not expand a DAG into its tree (transform,
// the printer, uses_var) visit such nodes once; a node held once has one parent.
inline bool may_be_shared(const Expr& e) {
  return e.ptr().use_count() > 1;
}
using VarMap = std::unordered_map<const ExprNode*, Expr>;
// Replaces variables (by identity) and rebuilds only what changed.
Expr substitute(const Expr& e, const VarMap& vmap);
// Visits every node in post-order.
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f);
// Rewrites bottom-up: `f` receives a node whose operands are already rewritten and returns a
// replacement (or the node itself).
Expr transform(const Expr& e, const std::function<Expr(const Expr&)>& f);
bool uses_var(const Expr& e, const ExprNode* var);
// The operands of a chain of `&&` (a null expression has none).
std::vector<Expr> conjuncts(const Expr& e);
bool uses_buffer(const Expr& e, const BufferNode* buf);

} // namespace mt
