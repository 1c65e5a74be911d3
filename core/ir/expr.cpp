#include "core/ir/expr.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/ir/buffer.h"
#include "core/ir/node_memo.h"

namespace mt {

const char* to_string(MathFn f) {
  const char* text = mt_math_fn_text(static_cast<mt_math_fn>(f));
  return text ? text : "?";
}

bool parse_math_fn(std::string_view s, MathFn* out) {
#define MT_MATCH_MATH_FN_(name, cpp, value, text)                                                  \
  if (s == text) {                                                                                 \
    *out = MathFn::cpp;                                                                            \
    return true;                                                                                   \
  }
  MT_MATH_FNS(MT_MATCH_MATH_FN_)
#undef MT_MATCH_MATH_FN_
  return false;
}

int math_fn_arity(MathFn f) {
  return mt_math_fn_arity(static_cast<mt_math_fn>(f));
}

const char* to_string(ExprKind k) {
  const char* text = mt_expr_kind_text(static_cast<mt_expr_kind>(k));
  return text ? text : "?";
}

bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }
bool is_comparison(ExprKind k) { return k >= ExprKind::EQ && k <= ExprKind::GE; }

namespace {

std::shared_ptr<ExprNode> new_node(ExprKind k, DType t) {
  auto n = std::make_shared<ExprNode>();
  n->kind = k;
  n->dtype = t;
  return n;
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) { return a - floordiv_i(a, b) * b; }

bool is_imm(const Expr& e) {
  return e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm;
}

// An immediate operand takes the type of the other operand so that `x * 2` works for floats.
Expr coerce(const Expr& lit, DType t) {
  if (lit->dtype == t) return lit;
  if (lit->kind == ExprKind::IntImm) {
    if (t.is_float()) return float_imm(static_cast<double>(lit->int_value), t);
    if (t.is_int() || t.is_bool()) return int_imm(lit->int_value, t);
  }
  if (lit->kind == ExprKind::FloatImm && t.is_float()) return float_imm(lit->float_value, t);
  return lit;
}

} // namespace

Expr Expr::from_int(int64_t v) { return int_imm(v); }
Expr Expr::from_float(double v) { return float_imm(v); }

Expr int_imm(int64_t v, DType t) {
  auto n = new_node(ExprKind::IntImm, t);
  n->int_value = v;
  return Expr(n);
}

Expr float_imm(double v, DType t) {
  auto n = new_node(ExprKind::FloatImm, t);
  n->float_value = v;
  return Expr(n);
}

Expr make_var(std::string name, DType t) {
  auto n = new_node(ExprKind::Var, t);
  n->name = std::move(name);
  return Expr(n);
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  if (!a || !b) throw std::invalid_argument("make_binary: null operand");
  if (!(a->dtype == b->dtype)) {
    if (is_imm(a)) a = coerce(a, b->dtype);
    else if (is_imm(b)) b = coerce(b, a->dtype);
  }
  if (!(a->dtype == b->dtype))
    throw std::invalid_argument(std::string("type mismatch in '") + to_string(kind) + "': " +
                                to_string(a->dtype) + " vs " + to_string(b->dtype));
  DType t = a->dtype;
  if (kind == ExprKind::Div && t.is_int()) kind = ExprKind::FloorDiv;
  if ((kind == ExprKind::FloorDiv || kind == ExprKind::FloorMod) && !t.is_int())
    throw std::invalid_argument("floordiv/floormod need integer operands");
  if (is_comparison(kind) || kind == ExprKind::And || kind == ExprKind::Or)
    t = DType::boolean();
  // Constant folding of integer immediates keeps builder output small.
  if (a->kind == ExprKind::IntImm && b->kind == ExprKind::IntImm && a->dtype.is_int()) {
    int64_t x = a->int_value, y = b->int_value;
    switch (kind) {
    case ExprKind::Add: return int_imm(x + y, t);
    case ExprKind::Sub: return int_imm(x - y, t);
    case ExprKind::Mul: return int_imm(x * y, t);
    case ExprKind::FloorDiv:
      if (y != 0) return int_imm(floordiv_i(x, y), t);
      break;
    case ExprKind::FloorMod:
      if (y != 0) return int_imm(floormod_i(x, y), t);
      break;
    case ExprKind::Min: return int_imm(std::min(x, y), t);
    case ExprKind::Max: return int_imm(std::max(x, y), t);
    default: break;
    }
  }
  auto n = new_node(kind, t);
  n->args = {std::move(a), std::move(b)};
  return Expr(n);
}

Expr make_not(Expr a) {
  auto n = new_node(ExprKind::Not, DType::boolean());
  n->args = {std::move(a)};
  return Expr(n);
}

Expr make_select(Expr c, Expr t, Expr f) {
  if (!(t->dtype == f->dtype)) {
    if (is_imm(t)) t = coerce(t, f->dtype);
    else if (is_imm(f)) f = coerce(f, t->dtype);
  }
  if (!(t->dtype == f->dtype))
    throw std::invalid_argument("select: branch types differ (" + to_string(t->dtype) + " vs " +
                                to_string(f->dtype) + ")");
  auto n = new_node(ExprKind::Select, t->dtype);
  n->args = {std::move(c), std::move(t), std::move(f)};
  return Expr(n);
}

Expr make_cast(DType t, Expr v) {
  if (v->dtype == t) return v;
  auto n = new_node(ExprKind::Cast, t);
  n->args = {std::move(v)};
  return Expr(n);
}

Expr make_load(Buffer buf, std::vector<Expr> indices) {
  if (!buf) throw std::invalid_argument("make_load: null buffer");
  if (indices.size() != buf->shape.size())
    throw std::invalid_argument("load of " + buf->name + ": " + std::to_string(indices.size()) +
                                " indices for rank " + std::to_string(buf->shape.size()));
  for (auto& i : indices) i = coerce(i, DType::index());
  auto n = new_node(ExprKind::Load, buf->dtype);
  n->buffer = std::move(buf);
  n->args = std::move(indices);
  return Expr(n);
}

Expr make_call(MathFn fn, std::vector<Expr> args) {
  if (static_cast<int>(args.size()) != math_fn_arity(fn))
    throw std::invalid_argument(std::string("wrong number of arguments to ") + to_string(fn) +
                                ": " + std::to_string(args.size()) + ", expected " +
                                std::to_string(math_fn_arity(fn)));
  if (args.size() == 2 && !(args[0]->dtype == args[1]->dtype)) {
    if (is_imm(args[1])) args[1] = coerce(args[1], args[0]->dtype);
    else if (is_imm(args[0])) args[0] = coerce(args[0], args[1]->dtype);
  }
  DType t = args[0]->dtype;
  auto n = new_node(ExprKind::Call, t);
  n->fn = fn;
  n->args = std::move(args);
  return Expr(n);
}

Expr with_args(const Expr& e, std::vector<Expr> args) {
  bool same = args.size() == e->args.size();
  for (size_t i = 0; same && i < args.size(); ++i) same = args[i].same_as(e->args[i]);
  if (same) return e;
  auto n = std::make_shared<ExprNode>(*e);
  n->args = std::move(args);
  return Expr(n);
}

Expr operator+(Expr a, Expr b) { return make_binary(ExprKind::Add, a, b); }
Expr operator-(Expr a, Expr b) { return make_binary(ExprKind::Sub, a, b); }
Expr operator*(Expr a, Expr b) { return make_binary(ExprKind::Mul, a, b); }
Expr operator/(Expr a, Expr b) { return make_binary(ExprKind::Div, a, b); }
Expr operator%(Expr a, Expr b) { return make_binary(ExprKind::FloorMod, a, b); }
Expr operator-(Expr a) {
  if (a->kind == ExprKind::IntImm) return int_imm(-a->int_value, a->dtype);
  if (a->kind == ExprKind::FloatImm) return float_imm(-a->float_value, a->dtype);
  return make_binary(ExprKind::Sub, coerce(int_imm(0), a->dtype), a);
}
Expr operator<(Expr a, Expr b) { return make_binary(ExprKind::LT, a, b); }
Expr operator<=(Expr a, Expr b) { return make_binary(ExprKind::LE, a, b); }
Expr operator>(Expr a, Expr b) { return make_binary(ExprKind::GT, a, b); }
Expr operator>=(Expr a, Expr b) { return make_binary(ExprKind::GE, a, b); }
Expr operator&&(Expr a, Expr b) { return make_binary(ExprKind::And, a, b); }
Expr operator||(Expr a, Expr b) { return make_binary(ExprKind::Or, a, b); }
Expr eq(Expr a, Expr b) { return make_binary(ExprKind::EQ, a, b); }
Expr ne(Expr a, Expr b) { return make_binary(ExprKind::NE, a, b); }
Expr min(Expr a, Expr b) { return make_binary(ExprKind::Min, a, b); }
Expr max(Expr a, Expr b) { return make_binary(ExprKind::Max, a, b); }
Expr floordiv(Expr a, Expr b) { return make_binary(ExprKind::FloorDiv, a, b); }
Expr floormod(Expr a, Expr b) { return make_binary(ExprKind::FloorMod, a, b); }
Expr exp(Expr a) { return make_call(MathFn::Exp, {a}); }
Expr log(Expr a) { return make_call(MathFn::Log, {a}); }
Expr tanh(Expr a) { return make_call(MathFn::Tanh, {a}); }
Expr erf(Expr a) { return make_call(MathFn::Erf, {a}); }
Expr sqrt(Expr a) { return make_call(MathFn::Sqrt, {a}); }
Expr rsqrt(Expr a) { return make_call(MathFn::Rsqrt, {a}); }
Expr pow(Expr a, Expr b) { return make_call(MathFn::Pow, {a, b}); }
Expr abs(Expr a) { return make_call(MathFn::Abs, {a}); }
Expr sigmoid(Expr a) { return make_call(MathFn::Sigmoid, {a}); }

bool is_const_int(const Expr& e, int64_t* value) {
  if (!e || e->kind != ExprKind::IntImm) return false;
  if (value) *value = e->int_value;
  return true;
}
bool is_const_int_value(const Expr& e, int64_t value) {
  int64_t v;
  return is_const_int(e, &v) && v == value;
}
bool is_var(const Expr& e) { return e && e->kind == ExprKind::Var; }

Expr min_value(DType t) {
  if (t.is_float()) return float_imm(-std::numeric_limits<double>::infinity(), t);
  if (t.kind == DTypeKind::UInt || t.is_bool()) return int_imm(0, t);
  return int_imm(t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits - 1)), t);
}
Expr max_value(DType t) {
  if (t.is_float()) return float_imm(std::numeric_limits<double>::infinity(), t);
  if (t.is_bool()) return int_imm(1, t);
  if (t.kind == DTypeKind::UInt) return int_imm(t.bits >= 64 ? -1 : (int64_t(1) << t.bits) - 1, t);
  return int_imm(t.bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (t.bits - 1)) - 1, t);
}

namespace {

// One transform() call. A node reached through more than one parent (may_be_shared) is
// rewritten once and its result reused: expressions built with common subexpressions (a
// polynomial in x*x, a select over the same quadrant) are DAGs whose tree form can be
// thousands of times larger, and rewriting them as trees both takes that long and turns the
// DAG into the tree for every later pass. Every caller's `f` depends on the node alone.
class Transformer {
public:
  explicit Transformer(const std::function<Expr(const Expr&)>& f) : f_(f) {}

  Expr operator()(const Expr& e) {
    if (!e) return e;
    if (e->args.empty()) return f_(e);
    bool shared = may_be_shared(e);
    if (shared)
      if (const Expr* done = memo_.find(e.get())) return *done;
    std::vector<Expr> args;
    args.reserve(e->args.size());
    for (const Expr& a : e->args) args.push_back((*this)(a));
    Expr out = f_(with_args(e, std::move(args)));
    if (shared) memo_.emplace(e, out);
    return out;
  }

private:
  const std::function<Expr(const Expr&)>& f_;
  NodeMemo<Expr> memo_;
};

} // namespace

Expr transform(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  return Transformer(f)(e);
}

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (!e || vmap.empty()) return e;
  return transform(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var) {
      auto it = vmap.find(x.get());
      if (it != vmap.end()) return it->second;
    }
    return x;
  });
}

void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (!e) return;
  for (const Expr& a : e->args) post_order_visit(a, f);
  f(e);
}

std::vector<Expr> conjuncts(const Expr& e) {
  std::vector<Expr> out;
  std::vector<Expr> stack;
  if (e) stack.push_back(e);
  while (!stack.empty()) {
    Expr x = stack.back();
    stack.pop_back();
    if (x->kind == ExprKind::And) {
      stack.push_back(x->args[1]);
      stack.push_back(x->args[0]);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

namespace {

// Whether any node of `e` satisfies `pred`: stops at the first, and walks a node with several
// parents once (see Transformer).
bool any_node(const Expr& e, const std::function<bool(const ExprNode&)>& pred) {
  std::vector<const Expr*> stack;
  NodeMemo<bool> walked;
  if (e) stack.push_back(&e);
  while (!stack.empty()) {
    const Expr& x = *stack.back();
    stack.pop_back();
    if (pred(*x)) return true;
    if (x->args.empty()) continue;
    if (may_be_shared(x)) {
      if (walked.find(x.get())) continue;
      walked.emplace(x, true);
    }
    for (const Expr& a : x->args)
      if (a) stack.push_back(&a);
  }
  return false;
}

} // namespace

bool uses_var(const Expr& e, const ExprNode* var) {
  return any_node(e, [&](const ExprNode& x) { return &x == var; });
}

bool uses_buffer(const Expr& e, const BufferNode* buf) {
  return any_node(e, [&](const ExprNode& x) {
    return x.kind == ExprKind::Load && x.buffer.get() == buf;
  });
}

} // namespace mt
