// Structural recognition of the GEMMs cuBLAS runs (see recognize_gemm.h).
#include "recognize_gemm.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "metatune/sdk/expr_equal.hpp"

namespace mt::cublas {

namespace {

[[noreturn]] void reject(std::string why) {
  throw NotOffered{std::move(why)};
}

bool offered_type(P::DType t) {
  return t == P::DType::f32() || t == P::DType::f16();
}

std::optional<int64_t> var_of(const P::Expr& e) {
  if (e->kind != P::ExprKind::Var) return std::nullopt;
  return e->var_id;
}

// A load of a parameter other than the result, possibly cast to the result's type.
struct Read {
  const P::ExprNode* load = nullptr;
  size_t param = 0;
};

Read read_of(const P::Expr& e, const P::Program& p, const P::Buffer& out) {
  const P::ExprNode* load = e.get();
  if (e->kind == P::ExprKind::Cast) {
    if (!(e->dtype == out->dtype))
      reject("an operand cast to " + P::to_string(e->dtype) + ", not to the result's " +
             P::to_string(out->dtype));
    load = e->args[0].get();
  } else if (e->kind == P::ExprKind::Load && !(e->dtype == out->dtype)) {
    reject("an operand of another type than the result");
  }
  if (load->kind != P::ExprKind::Load)
    reject("a product whose factors are not tensor elements (an elementwise prologue)");
  if (load->buffer->id == out->id) reject("a product reading the result");
  for (size_t i = 0; i < p.params.size(); ++i)
    if (p.params[i]->id == load->buffer->id) return {load, i};
  reject("an operand that is not a parameter");
}

// The loop variables indexing each dimension of `idx` (distinct, each spanning its dim).
std::vector<int64_t> index_vars(const std::vector<P::Expr>& idx, const P::Buffer& b,
                                const std::unordered_map<int64_t, int64_t>& extents,
                                const char* what) {
  std::vector<int64_t> vars;
  for (size_t d = 0; d < idx.size(); ++d) {
    std::optional<int64_t> v = var_of(idx[d]);
    if (!v || !extents.count(*v))
      reject(std::string("an index of the ") + what + " that is not a loop variable");
    if (extents.at(*v) != b->shape[d])
      reject(std::string("a loop that does not span its dimension of the ") + what);
    if (std::count(vars.begin(), vars.end(), *v))
      reject(std::string("a loop variable used twice in the ") + what);
    vars.push_back(*v);
  }
  return vars;
}

// `vars` without the batch variable (which must come first), as the two matrix dims.
std::vector<int64_t> matrix_dims(std::vector<int64_t> vars, std::optional<int64_t> batch,
                                 const char* what) {
  if (batch && !vars.empty() && vars.front() == *batch) vars.erase(vars.begin());
  if (batch && std::count(vars.begin(), vars.end(), *batch))
    reject(std::string("a batch dimension that is not the outermost of the ") + what);
  if (vars.size() != 2)
    reject(std::string("a ") + what + " that is not a matrix (or a batch of them)");
  return vars;
}

} // namespace

std::string GemmPlan::detail() const {
  auto mat = [](int64_t r, int64_t c, bool t) {
    return t ? "[" + std::to_string(c) + "," + std::to_string(r) + "]^T"
             : "[" + std::to_string(r) + "," + std::to_string(c) + "]";
  };
  std::string s = batch > 1 ? std::to_string(batch) + " x " : "";
  s += mat(m, k, a.transposed) + (a.batch_stride || batch == 1 ? "" : " (shared)") + " x " +
       mat(k, n, b.transposed) + (b.batch_stride || batch == 1 ? "" : " (shared)") + " -> " +
       mat(m, n, false) + " " + P::to_string(a.dtype) + " x " + P::to_string(b.dtype) + " -> " +
       P::to_string(c_dtype);
  return s;
}

GemmPlan recognize_gemm(const P::Program& p) {
  std::vector<bool> outs = P::output_mask(p);
  if (std::count(outs.begin(), outs.end(), true) != 1) reject("not exactly one output");
  if (!P::free_buffers(p).empty()) reject("intermediate buffers (more than one loop nest)");

  // for ... for { if (k == 0) C[idx] = 0; C[idx] = C[idx] + x * y }
  P::Stmt s = p.body;
  while (s && s->kind == P::StmtKind::Seq && s->stmts.size() == 1)
    s = s->stmts[0];
  if (s && s->kind == P::StmtKind::Allocate)
    reject("more than one loop nest (an intermediate buffer)");
  if (s && s->kind == P::StmtKind::Seq) reject("more than one loop nest");
  std::unordered_map<int64_t, int64_t> extents;
  while (s && s->kind == P::StmtKind::For) {
    if (s->for_kind != P::ForKind::Serial)
      reject(std::string("a ") + P::to_string(s->for_kind) + " loop (a scheduled program)");
    extents[s->loop_var->var_id] = s->extent;
    s = s->body;
  }
  if (!s || s->kind != P::StmtKind::Seq || s->stmts.size() != 2 ||
      s->stmts[0]->kind != P::StmtKind::IfThenElse || s->stmts[1]->kind != P::StmtKind::Store)
    reject("not one loop nest of a reduction (init, then update)");
  const P::StmtNode& init_if = *s->stmts[0];
  const P::StmtNode& update = *s->stmts[1];
  const P::Buffer& out = update.buffer;
  const size_t c_param =
      static_cast<size_t>(std::find_if(p.params.begin(), p.params.end(),
                                       [&](const P::Buffer& b) { return b->id == out->id; }) -
                          p.params.begin());
  if (c_param == p.params.size() || !outs[c_param])
    reject("a reduction into a buffer that is not the output");

  // The result: C[b?, i, j], each index a loop variable spanning its dimension.
  if (out->shape.size() != 2 && out->shape.size() != 3)
    reject("a result of rank " + std::to_string(out->shape.size()) + " (2 or 3 are offered)");
  std::vector<int64_t> out_vars = index_vars(update.indices, out, extents, "result");
  if (extents.size() != out_vars.size() + 1) reject("a nest without exactly one reduction loop");
  int64_t k_var = -1;
  for (const auto& [v, e] : extents)
    if (!std::count(out_vars.begin(), out_vars.end(), v)) k_var = v;

  // Init: if (k == 0) C[idx] = 0.
  const P::ExprNode& cond = *init_if.condition;
  if (init_if.else_case || cond.kind != P::ExprKind::EQ || var_of(cond.args[0]) != k_var ||
      cond.args[1]->kind != P::ExprKind::IntImm || cond.args[1]->int_value != 0)
    reject("a reduction whose init is not guarded by its reduction loop == 0");
  const P::StmtNode& init = *init_if.then_case;
  if (init.kind != P::StmtKind::Store || init.buffer->id != out->id ||
      !P::exprs_equal(init.indices, update.indices) || init.value->kind != P::ExprKind::FloatImm ||
      init.value->float_value != 0.0)
    reject("a reduction whose init does not store 0 to the element it updates");

  // Update: C[idx] = C[idx] + x * y (either order).
  const P::ExprNode& v = *update.value;
  if (v.kind != P::ExprKind::Add) reject("a reduction other than a sum");
  std::optional<size_t> self;
  for (size_t side = 0; side < 2 && !self; ++side)
    if (v.args[side]->kind == P::ExprKind::Load && v.args[side]->buffer->id == out->id &&
        P::exprs_equal(v.args[side]->args, update.indices))
      self = side;
  if (!self) reject("a sum that does not accumulate into the element it stores");
  const P::Expr& rhs = v.args[1 - *self];
  if (rhs->kind != P::ExprKind::Mul) reject("a sum of something other than a product");
  Read x = read_of(rhs->args[0], p, out), y = read_of(rhs->args[1], p, out);

  // Types cuBLAS takes with f32 accumulation: f16 or f32 operands of one type, an f16 or f32
  // result, f32 operands only with an f32 result.
  const P::DType in_t = x.load->dtype, out_t = out->dtype;
  if (!(y.load->dtype == in_t)) reject("operands of two types");
  if (!offered_type(in_t) || !offered_type(out_t))
    reject(P::to_string(in_t) + " x " + P::to_string(in_t) + " -> " + P::to_string(out_t) +
           " (f16 or f32 operands, f16 or f32 result are offered)");
  if (in_t == P::DType::f32() && out_t == P::DType::f16())
    reject("f32 operands with an f16 result");

  // Roles: the result's last dim is B's column, the one before A's row, a first one the batch.
  const int64_t j_var = out_vars.back(), i_var = out_vars[out_vars.size() - 2];
  std::optional<int64_t> b_var;
  if (out_vars.size() == 3) b_var = out_vars[0];
  std::vector<int64_t> xv = index_vars(x.load->args, x.load->buffer, extents, "operand"),
                       yv = index_vars(y.load->args, y.load->buffer, extents, "operand");
  auto has = [](const std::vector<int64_t>& vs, int64_t var) {
    return std::count(vs.begin(), vs.end(), var) != 0;
  };
  if (has(xv, j_var) || has(yv, i_var)) {
    std::swap(x, y);
    std::swap(xv, yv);
  }
  if (!has(xv, i_var) || !has(yv, j_var) || has(xv, j_var) || has(yv, i_var))
    reject("operands that do not each carry one of the result's two matrix dims");
  if (!has(xv, k_var) || !has(yv, k_var)) reject("a reduction loop not read by both operands");
  if (b_var && !has(xv, *b_var) && !has(yv, *b_var))
    reject("a result dimension that no operand reads");
  std::vector<int64_t> am = matrix_dims(xv, b_var, "first operand"),
                       bm = matrix_dims(yv, b_var, "second operand");

  GemmPlan g;
  g.m = extents.at(i_var);
  g.n = extents.at(j_var);
  g.k = extents.at(k_var);
  g.batch = b_var ? extents.at(*b_var) : 1;
  for (int64_t d : {g.m, g.n, g.k, g.batch})
    if (d > std::numeric_limits<int>::max()) reject("a dimension over 2^31");
  g.a = {x.param, in_t, am[0] == k_var, b_var && has(xv, *b_var) ? g.m * g.k : 0};
  g.b = {y.param, in_t, bm[0] == j_var, b_var && has(yv, *b_var) ? g.k * g.n : 0};
  g.c_param = c_param;
  g.c_dtype = out_t;
  return g;
}

// Row-major C = A x B is column-major C^T = B^T x A^T: cuBLAS gets B's buffer first and A's
// second, m and n swapped; an operand stored transposed is the other cuBLAS op.
GemmCall column_major_call(const GemmPlan& g) {
  auto type = [](P::DType t) { return t == P::DType::f16() ? DataType::R16F : DataType::R32F; };
  GemmCall c;
  c.m = static_cast<int>(g.n);
  c.n = static_cast<int>(g.m);
  c.k = static_cast<int>(g.k);
  c.trans_a = g.b.transposed ? Op::T : Op::N;
  c.a_type = type(g.b.dtype);
  c.lda = static_cast<int>(g.b.transposed ? g.k : g.n);
  c.stride_a = g.b.batch_stride;
  c.trans_b = g.a.transposed ? Op::T : Op::N;
  c.b_type = type(g.a.dtype);
  c.ldb = static_cast<int>(g.a.transposed ? g.m : g.k);
  c.stride_b = g.a.batch_stride;
  c.c_type = type(g.c_dtype);
  c.ldc = static_cast<int>(g.n);
  c.stride_c = g.m * g.n;
  c.batch = static_cast<int>(g.batch);
  return c;
}

} // namespace mt::cublas
