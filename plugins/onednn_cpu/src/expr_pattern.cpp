// The pattern matcher and the eltwise / binary templates.
#include "expr_pattern.hpp"

#include <cmath>

namespace mt::onednn {

namespace {

bool close(double a, double b) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
}

bool is_ac(P::ExprKind k) {
  return k == P::ExprKind::Add || k == P::ExprKind::Mul;
}

void flatten(const P::Expr& e, P::ExprKind k, std::vector<P::Expr>* out) {
  if (e->kind == k) {
    for (const auto& a : e->args)
      flatten(a, k, out);
  } else {
    out->push_back(e);
  }
}

// Assigns operands to pattern kids (any order), backtracking over the choices.
bool match_unordered(const std::vector<Pat>& kids, size_t i, const std::vector<P::Expr>& ops,
                     std::vector<bool>& used, const P::Expr& x, Captures* caps) {
  if (i == kids.size()) return true;
  for (size_t j = 0; j < ops.size(); ++j) {
    if (used[j]) continue;
    Captures saved = *caps;
    if (match(kids[i], ops[j], x, caps)) {
      used[j] = true;
      if (match_unordered(kids, i + 1, ops, used, x, caps)) return true;
      used[j] = false;
    }
    *caps = saved;
  }
  return false;
}

} // namespace

bool match(const Pat& p, const P::Expr& e, const P::Expr& x, Captures* caps) {
  if (!e) return false;
  double v = 0;
  switch (p.kind) {
  case Pat::X:
    return P::expr_equal(e, x);
  case Pat::Const:
    return float_value(e, &v) && close(v, p.value);
  case Pat::AnyConst:
    if (!float_value(e, &v)) return false;
    caps->consts[p.slot] = v;
    return true;
  case Pat::Any:
    caps->exprs[p.slot] = e;
    return true;
  case Pat::Fn:
    if (e->kind != P::ExprKind::Call || e->fn != p.fn || e->args.size() != p.kids.size())
      return false;
    for (size_t i = 0; i < p.kids.size(); ++i)
      if (!match(p.kids[i], e->args[i], x, caps)) return false;
    return true;
  case Pat::Op:
    break;
  }
  if (e->kind != p.op) return false;
  std::vector<P::Expr> ops;
  if (is_ac(p.op))
    flatten(e, p.op, &ops);
  else
    ops = e->args;
  if (ops.size() != p.kids.size()) return false;
  if (is_ac(p.op) || p.op == P::ExprKind::Max || p.op == P::ExprKind::Min) {
    std::vector<bool> used(ops.size(), false);
    return match_unordered(p.kids, 0, ops, used, x, caps);
  }
  for (size_t i = 0; i < ops.size(); ++i)
    if (!match(p.kids[i], ops[i], x, caps)) return false;
  return true;
}

std::optional<PostOp> match_unary(const P::Expr& e, const P::Expr& x) {
  using namespace pat;
  using K = P::ExprKind;
  using F = P::MathFn;
  static const double kInvSqrt2 = 1.0 / std::sqrt(2.0), kSqrt2 = std::sqrt(2.0);
  static const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);
  struct Template {
    Alg alg;
    Pat p;
  };
  static const std::vector<Template> templates = [&] {
    Pat cube = op(K::Mul, {c(0.044715), X(), X(), X()});
    Pat cube_pow = op(K::Mul, {c(0.044715), fn(F::Pow, {X(), c(3)})});
    auto gelu_tanh = [&](const Pat& cubed) {
      return op(
          K::Mul,
          {c(0.5), X(),
           op(K::Add,
              {c(1), fn(F::Tanh, {op(K::Mul, {c(kSqrt2OverPi), op(K::Add, {X(), cubed})})})})});
    };
    return std::vector<Template>{
        {Alg::Relu, op(K::Max, {X(), c(0)})},
        {Alg::Logistic, fn(F::Sigmoid, {X()})},
        {Alg::Logistic,
         op(K::Div, {c(1), op(K::Add, {c(1), fn(F::Exp, {op(K::Sub, {c(0), X()})})})})},
        {Alg::Logistic,
         op(K::Div, {c(1), op(K::Add, {c(1), fn(F::Exp, {op(K::Mul, {c(-1), X()})})})})},
        {Alg::Swish, op(K::Mul, {X(), fn(F::Sigmoid, {X()})})},
        {Alg::Tanh, fn(F::Tanh, {X()})},
        {Alg::Exp, fn(F::Exp, {X()})},
        {Alg::Log, fn(F::Log, {X()})},
        {Alg::Sqrt, fn(F::Sqrt, {X()})},
        {Alg::Abs, fn(F::Abs, {X()})},
        {Alg::GeluErf,
         op(K::Mul,
            {X(), c(0.5), op(K::Add, {fn(F::Erf, {op(K::Mul, {X(), c(kInvSqrt2)})}), c(1)})})},
        {Alg::GeluErf,
         op(K::Mul, {X(), c(0.5), op(K::Add, {fn(F::Erf, {op(K::Div, {X(), c(kSqrt2)})}), c(1)})})},
        {Alg::GeluTanh, gelu_tanh(cube)},
        {Alg::GeluTanh, gelu_tanh(cube_pow)},
    };
  }();
  for (const Template& t : templates) {
    Captures caps;
    if (match(t.p, e, x, &caps)) return eltwise_step(t.alg);
  }
  // alpha * x + beta in its usual spellings.
  Captures caps;
  if (match(op(K::Mul, {X(), any_c(0)}), e, x, &caps))
    return eltwise_step(Alg::Linear, static_cast<float>(caps.consts[0]));
  if (match(op(K::Div, {X(), any_c(0)}), e, x, &caps) && caps.consts[0] != 0)
    return eltwise_step(Alg::Linear, static_cast<float>(1.0 / caps.consts[0]));
  if (match(op(K::Add, {X(), any_c(1)}), e, x, &caps))
    return eltwise_step(Alg::Linear, 1, static_cast<float>(caps.consts[1]));
  if (match(op(K::Sub, {X(), any_c(1)}), e, x, &caps))
    return eltwise_step(Alg::Linear, 1, static_cast<float>(-caps.consts[1]));
  if (match(op(K::Add, {op(K::Mul, {X(), any_c(0)}), any_c(1)}), e, x, &caps))
    return eltwise_step(Alg::Linear, static_cast<float>(caps.consts[0]),
                        static_cast<float>(caps.consts[1]));
  return std::nullopt;
}

std::optional<std::pair<Alg, P::Expr>> match_binary(const P::Expr& e, const P::Expr& x) {
  using namespace pat;
  using K = P::ExprKind;
  static const std::pair<K, Alg> kinds[] = {{K::Add, Alg::Add}, {K::Sub, Alg::Sub},
                                            {K::Mul, Alg::Mul}, {K::Div, Alg::Div},
                                            {K::Max, Alg::Max}, {K::Min, Alg::Min}};
  if (!e || e->args.size() != 2) return std::nullopt;
  for (auto [k, alg] : kinds) {
    if (e->kind != k) continue;
    // Only x OP y itself (not a longer chain): a flattened Add/Mul of more terms is not one
    // binary step.
    Captures caps;
    if (match(op(k, {X(), any(0)}), e, x, &caps) && caps.exprs[0]->kind == K::Load)
      return std::make_pair(alg, caps.exprs[0]);
  }
  return std::nullopt;
}

const char* to_string(Alg a) {
  switch (a) {
  case Alg::Relu:
    return "relu";
  case Alg::GeluErf:
    return "gelu_erf";
  case Alg::GeluTanh:
    return "gelu_tanh";
  case Alg::Logistic:
    return "sigmoid";
  case Alg::Swish:
    return "swish";
  case Alg::Tanh:
    return "tanh";
  case Alg::Exp:
    return "exp";
  case Alg::Log:
    return "log";
  case Alg::Sqrt:
    return "sqrt";
  case Alg::Abs:
    return "abs";
  case Alg::Linear:
    return "linear";
  case Alg::Add:
    return "add";
  case Alg::Sub:
    return "sub";
  case Alg::Mul:
    return "mul";
  case Alg::Div:
    return "div";
  case Alg::Max:
    return "max";
  case Alg::Min:
    return "min";
  case Alg::Select:
    return "select";
  }
  return "?";
}

} // namespace mt::onednn
