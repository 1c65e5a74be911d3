// KernelWriter: Expressions as source text: flat, row-major and swizzled indices, and arithmetic
// computed in float where the program's type is f16/bf16.
#include "writer.h"

namespace mt::gpu_codegen::writer {

bool KernelWriter::non_negative(const P::Expr& e) const {
  switch (e->kind) {
  case ExprKind::IntImm:
    return e->int_value >= 0;
  case ExprKind::Var: // loop variables, thread indices and host loop variables
    return true;
  case ExprKind::Add:
  case ExprKind::Mul:
  case ExprKind::Min:
  case ExprKind::Max:
    return non_negative(e->args[0]) && non_negative(e->args[1]);
  case ExprKind::FloorDiv:
  case ExprKind::FloorMod:
    return non_negative(e->args[0]) && P::is_const_int(e->args[1]) && e->args[1]->int_value > 0;
  default:
    return false;
  }
}

std::string KernelWriter::flat_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
  std::string flat = row_major_index(b, indices);
  auto e = expanded_.find(b->id);
  if (e == expanded_.end()) return flat;
  return flat + " + " + var_name(vt_->var) + " * " + std::to_string(e->second);
}

std::optional<CoreMatrixLayout> KernelWriter::core_matrix_layout(const P::Buffer& b) const {
  auto it = core_matrix_.find(b->id);
  if (it == core_matrix_.end()) return std::nullopt;
  return it->second;
}

std::string KernelWriter::row_major_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
  if (auto layout = core_matrix_layout(b)) {
    if (*layout == CoreMatrixLayout::Swizzle128) return swizzled_index(b, indices);
    return bare(core_matrix_offset(*b, indices, *layout));
  }
  std::string out;
  int64_t stride = 1;
  for (size_t i = indices.size(); i-- > 0;) {
    int64_t c;
    std::string term;
    if (P::is_const_int(indices[i], &c)) {
      term = std::to_string(c * stride);
    } else {
      // expr() parenthesises every compound expression itself.
      term = expr(indices[i]);
      if (stride != 1) term += " * " + std::to_string(stride);
    }
    out = out.empty() ? term : term + " + " + out;
    stride *= b->shape[i];
  }
  return out.empty() ? "0" : out;
}

std::string KernelWriter::swizzled_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
  const size_t nd = indices.size();
  const int64_t R = b->shape[nd - 2], C = b->shape[nd - 1];
  const int64_t line = 128 / b->dtype.bytes();
  const std::string r = expr(indices[nd - 2]), c = expr(indices[nd - 1]);
  const std::string l = std::to_string(line);
  std::string out = "(" + c + " / " + l + ") * " + std::to_string(R * line) + " + (" + r +
                    " / 8) * " + std::to_string(8 * line) + " + (" + r + " % 8) * " + l + " + (((" +
                    c + " % " + l + ") / 8) ^ (" + r + " % 8)) * 8 + " + c + " % 8";
  if (nd == 2) return out;
  std::string outer = expr(indices[0]);
  for (size_t d = 1; d + 2 < nd; ++d)
    outer = "(" + outer + ") * " + std::to_string(b->shape[d]) + " + " + expr(indices[d]);
  return "(" + outer + ") * " + std::to_string(R * C) + " + " + out;
}

std::string KernelWriter::bare(const P::Expr& e) {
  std::string s = expr(e);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return s; // "(a) * (b)"
  }
  return s.substr(1, s.size() - 2);
}

std::string KernelWriter::expr(const P::Expr& e) {
  std::string x = expr_in_float(e);
  if (!is_half(e->dtype)) return x;
  switch (e->kind) {
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::Call:
  case ExprKind::Cast:
  case ExprKind::FloatImm:
    return rounded(e->dtype, x);
  default: // loads are exact; min, max and select pick an operand
    return x;
  }
}

std::string KernelWriter::expr_in_float(const P::Expr& e) {
  const P::DType t = e->dtype;
  auto a = [&](size_t i) { return expr(e->args[i]); };
  switch (e->kind) {
  case ExprKind::IntImm:
    if (t.is_bool()) return e->int_value ? "1" : "0";
    if (t == P::DType::index()) return std::to_string(e->int_value);
    return "((" + d_.type_name(t) + ")" + std::to_string(e->int_value) + ")";
  case ExprKind::FloatImm:
    return float_literal(e->float_value, t);
  case ExprKind::Var:
    return var_name(e);
  case ExprKind::Add:
    return "(" + a(0) + " + " + a(1) + ")";
  case ExprKind::Sub:
    return "(" + a(0) + " - " + a(1) + ")";
  case ExprKind::Mul:
    return "(" + a(0) + " * " + a(1) + ")";
  case ExprKind::Div:
    if (t.is_float()) return "(" + a(0) + " / " + a(1) + ")";
    [[fallthrough]];
  case ExprKind::FloorDiv:
    if (non_negative(e)) return "(" + a(0) + " / " + a(1) + ")";
    return helper("floordiv", t) + "(" + a(0) + ", " + a(1) + ")";
  case ExprKind::FloorMod:
    if (non_negative(e)) return "(" + a(0) + " % " + a(1) + ")";
    return helper("floormod", t) + "(" + a(0) + ", " + a(1) + ")";
  case ExprKind::Min:
    return helper("min", t) + "(" + a(0) + ", " + a(1) + ")";
  case ExprKind::Max:
    return helper("max", t) + "(" + a(0) + ", " + a(1) + ")";
  case ExprKind::EQ:
    return "(" + a(0) + " == " + a(1) + ")";
  case ExprKind::NE:
    return "(" + a(0) + " != " + a(1) + ")";
  case ExprKind::LT:
    return "(" + a(0) + " < " + a(1) + ")";
  case ExprKind::LE:
    return "(" + a(0) + " <= " + a(1) + ")";
  case ExprKind::GT:
    return "(" + a(0) + " > " + a(1) + ")";
  case ExprKind::GE:
    return "(" + a(0) + " >= " + a(1) + ")";
  case ExprKind::And:
    return "(" + a(0) + " && " + a(1) + ")";
  case ExprKind::Or:
    return "(" + a(0) + " || " + a(1) + ")";
  case ExprKind::Not:
    return "(!" + a(0) + ")";
  case ExprKind::Select:
    return "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
  case ExprKind::Cast:
    if (t.is_bool()) return "(" + a(0) + " != 0)";
    return "((" + type_of(t) + ")" + a(0) + ")";
  case ExprKind::Load:
    return read_element(e->buffer, flat_index(e->buffer, e->args));
  case ExprKind::Call: {
    if (!t.is_float()) {
      if (e->fn == P::MathFn::Abs) return helper("abs", t) + "(" + a(0) + ")";
      throw UnsupportedError(std::string("math function ") + P::to_string(e->fn) + " on integers");
    }
    std::vector<std::string> args;
    for (size_t i = 0; i < e->args.size(); ++i)
      args.push_back(a(i));
    return d_.math(e->fn, t, args);
  }
  }
  throw UnsupportedError(std::string("expression kind ") + P::to_string(e->kind));
}

std::string KernelWriter::combine(ExprKind k, P::DType t, const std::string& x,
                                  const std::string& y) {
  if (k == ExprKind::Add) return is_half(t) ? rounded(t, x + " + " + y) : "(" + x + " + " + y + ")";
  return helper(k == ExprKind::Max ? "max" : "min", t) + "(" + x + ", " + y + ")";
}

std::string KernelWriter::identity(ExprKind k, P::DType t) {
  if (k == ExprKind::Add) return t.is_float() ? float_literal(0.0, t) : "0";
  bool neg = k == ExprKind::Max;
  if (t.is_float()) return d_.infinity(t, neg);
  int bits = t.bits == 64 && plan_.index32 && t == P::DType::index() ? 32 : t.bits;
  std::string ty = type_of(t);
  if (t.kind == P::DTypeKind::UInt)
    return neg ? "((" + ty + ")0)" : "((" + ty + ")~((" + ty + ")0))";
  if (bits >= 64)
    return neg ? "((" + ty + ")(-9223372036854775807 - 1))" : "((" + ty + ")9223372036854775807)";
  int64_t hi = (int64_t{1} << (bits - 1)) - 1;
  return neg ? "((" + ty + ")(" + std::to_string(-hi) + " - 1))"
             : "((" + ty + ")" + std::to_string(hi) + ")";
}

} // namespace mt::gpu_codegen::writer
