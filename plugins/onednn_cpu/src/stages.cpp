// Stage extraction from the lowered program tree, and the expression helpers used by the
// recognisers.
#include "stages.hpp"

#include <algorithm>

namespace mt::onednn {

int64_t Stage::extent_of(int64_t var) const {
  for (const Loop& l : loops)
    if (l.var == var) return l.extent;
  return 0;
}

bool Stage::is_reduce_var(int64_t var) const {
  return std::any_of(rvars.begin(), rvars.end(), [&](const Loop& l) { return l.var == var; });
}

size_t StageProgram::param_of(const P::Buffer& b) const {
  auto it = param_index.find(b->id);
  if (it == param_index.end()) reject("buffer is not a parameter");
  return it->second;
}

int StageProgram::producer(const P::Buffer& b) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].out->id == b->id) return static_cast<int>(i);
  return -1;
}

int StageProgram::num_reads(const P::Buffer& b) const {
  int n = 0;
  for (const Stage& s : stages)
    P::post_order_visit(s.value, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Load && x->buffer->id == b->id) ++n;
    });
  return n;
}

namespace {

// Var ids of a conjunction of `v == 0` tests, or nullopt if it is anything else.
std::optional<std::vector<int64_t>> zero_tests(const P::Expr& c) {
  if (c->kind == P::ExprKind::And) {
    auto a = zero_tests(c->args[0]), b = zero_tests(c->args[1]);
    if (!a || !b) return std::nullopt;
    a->insert(a->end(), b->begin(), b->end());
    return a;
  }
  int64_t v = 0;
  if (c->kind == P::ExprKind::EQ && is_var(c->args[0], &v) && is_int(c->args[1], 0))
    return std::vector<int64_t>{v};
  return std::nullopt;
}

Stage make_stage(const std::vector<Loop>& loops, const P::Stmt& leaf) {
  Stage st;
  st.loops = loops;
  const P::StmtNode* store = nullptr;
  const P::StmtNode* init_if = nullptr;
  if (leaf->kind == P::StmtKind::Store) {
    store = leaf.get();
  } else if (leaf->kind == P::StmtKind::Seq && leaf->stmts.size() == 2 &&
             leaf->stmts[0]->kind == P::StmtKind::IfThenElse &&
             leaf->stmts[1]->kind == P::StmtKind::Store) {
    init_if = leaf->stmts[0].get();
    store = leaf->stmts[1].get();
  } else {
    reject("a loop nest whose body is not one store (or an init and an update)");
  }
  st.out = store->buffer;
  st.out_idx = store->indices;
  std::unordered_set<int64_t> seen;
  for (size_t d = 0; d < st.out_idx.size(); ++d) {
    int64_t v = 0;
    if (is_var(st.out_idx[d], &v) && st.extent_of(v) == st.out->shape[d] && seen.insert(v).second)
      st.out_vars.push_back(v);
    else if (is_int(st.out_idx[d], 0) && st.out->shape[d] == 1)
      st.out_vars.push_back(-1);
    else
      reject("a store whose indices are not the loop variables of its nest");
  }
  for (const Loop& l : loops)
    if (!seen.count(l.var)) st.rvars.push_back(l);

  if (!init_if) {
    for (const Loop& l : st.rvars)
      if (l.extent != 1) reject("a loop nest with a loop the stored element does not depend on");
    st.value = store->value;
    return st;
  }
  // Reduction: if (r1 == 0 && ...) { out[idx] = init } out[idx] = combine(out[idx], rhs)
  if (init_if->else_case || init_if->then_case->kind != P::StmtKind::Store ||
      init_if->then_case->buffer->id != st.out->id ||
      !P::exprs_equal(init_if->then_case->indices, st.out_idx) ||
      !float_value(init_if->then_case->value, &st.init))
    reject("a reduction whose init is not a constant store to the same element");
  auto tested = zero_tests(init_if->condition);
  if (!tested) reject("a reduction init guarded by something other than reduction vars == 0");
  for (const Loop& l : st.rvars)
    if (l.extent > 1 && std::find(tested->begin(), tested->end(), l.var) == tested->end())
      reject("a reduction init not guarded by every reduction variable");
  for (int64_t v : *tested)
    if (!st.is_reduce_var(v)) reject("a reduction init guarded by an output variable");
  const P::Expr& val = store->value;
  P::Expr self, rhs;
  if (val->kind == P::ExprKind::Add || val->kind == P::ExprKind::Max ||
      val->kind == P::ExprKind::Min) {
    for (int side = 0; side < 2; ++side) {
      const P::Expr& a = val->args[side];
      if (a->kind == P::ExprKind::Load && a->buffer->id == st.out->id &&
          P::exprs_equal(a->args, st.out_idx)) {
        self = a;
        rhs = val->args[1 - side];
        break;
      }
    }
  }
  if (!self) reject("a reduction update that is not out = out + x (or max / min)");
  st.reduce = val->kind == P::ExprKind::Add   ? Reduce::Sum
              : val->kind == P::ExprKind::Max ? Reduce::Max
                                              : Reduce::Min;
  P::post_order_visit(rhs, [&](const P::Expr& x) {
    if (x->kind == P::ExprKind::Load && x->buffer->id == st.out->id)
      reject("a reduction operand that reads the accumulator");
  });
  st.value = rhs;
  return st;
}

void walk(const P::Stmt& s, std::vector<Loop>& loops, StageProgram& out) {
  switch (s->kind) {
  case P::StmtKind::Allocate:
    if (!loops.empty()) reject("an allocation inside a loop nest (a scheduled program)");
    out.intermediates.insert(s->buffer->id);
    walk(s->body, loops, out);
    return;
  case P::StmtKind::Seq:
    if (!loops.empty()) {
      // Only the reduction pattern (init + update) may sit inside a nest.
      out.stages.push_back(make_stage(loops, s));
      return;
    }
    for (const auto& x : s->stmts)
      walk(x, loops, out);
    return;
  case P::StmtKind::For:
    loops.push_back({s->loop_var->var_id, s->extent});
    walk(s->body, loops, out);
    loops.pop_back();
    return;
  case P::StmtKind::Store:
    out.stages.push_back(make_stage(loops, s));
    return;
  case P::StmtKind::IfThenElse:
    reject("a guarded statement outside a reduction (a scheduled program)");
  }
}

// An i32 parameter read anywhere but in a select's condition (the tail's masks take them
// there; nothing else reads integers).
void reject_i32_outside_conditions(const P::Expr& e, const std::unordered_set<int64_t>& i32,
                                   bool in_condition) {
  if (e->kind == P::ExprKind::Load && i32.count(e->buffer->id) && !in_condition)
    reject("an i32 parameter read outside a mask's condition (only f32 is offered)");
  for (size_t a = 0; a < e->args.size(); ++a)
    reject_i32_outside_conditions(e->args[a], i32,
                                  in_condition || (e->kind == P::ExprKind::Select && a == 0));
}

} // namespace

StageProgram extract_stages(const P::Program& program) {
  StageProgram sp;
  sp.program = &program;
  // f32 parameters, and i32 ones read only by masks' conditions (a decode step's positions;
  // checked below, once the stages are known).
  std::unordered_set<int64_t> i32_params;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const P::DType t = program.params[i]->dtype;
    if (t == P::DType::i32())
      i32_params.insert(program.params[i]->id);
    else if (!(t == P::DType::f32()))
      reject("parameter " + std::to_string(i) + " is " + P::to_string(t) +
             " (only f32 is offered)");
    sp.param_index[program.params[i]->id] = i;
  }
  std::vector<Loop> loops;
  walk(program.body, loops, sp);
  if (sp.stages.empty()) reject("an empty program");
  std::vector<bool> outs = P::output_mask(program);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) sp.outputs.push_back(i);
  if (sp.outputs.empty()) reject("a program without output");
  sp.output_param = sp.outputs[0];
  for (const Stage& s : sp.stages)
    reject_i32_outside_conditions(s.value, i32_params, false);
  // Every buffer is written by exactly one stage, before it is read.
  std::unordered_set<int64_t> written;
  for (const Stage& s : sp.stages) {
    if (s.out->dtype.is_float() == false) reject("a non-float intermediate");
    P::post_order_visit(s.value, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Load && !sp.is_param(x->buffer) && !written.count(x->buffer->id))
        reject("a stage reads a buffer no earlier stage wrote");
      if (x->kind == P::ExprKind::Load && sp.is_param(x->buffer) &&
          std::count(sp.outputs.begin(), sp.outputs.end(), sp.param_of(x->buffer)))
        reject("a stage reads the output");
    });
    if (!written.insert(s.out->id).second) reject("a buffer written by two loop nests");
  }
  if (sp.outputs.size() == 1 && sp.stages.back().out->id != program.params[sp.output_param]->id)
    reject("the last loop nest does not write the output");
  return sp;
}

std::vector<StageProgram> split_outputs(const StageProgram& sp) {
  const size_t n = sp.outputs.size(), head = sp.stages.size() - std::min(n, sp.stages.size());
  if (n < 2 || head == 0) reject("a program with more than one output");
  const P::Buffer& result = sp.stages[head - 1].out;
  if (!sp.intermediates.count(result->id) || sp.num_reads(result) != static_cast<int>(n))
    reject("a program with more than one output, not slices of one result");
  for (size_t k = 0; k < head; ++k)
    if (!sp.intermediates.count(sp.stages[k].out->id))
      reject("a program with more than one output, written before its last steps");
  std::vector<StageProgram> parts;
  for (size_t k = head; k < sp.stages.size(); ++k) {
    const Stage& copy = sp.stages[k];
    const P::Expr& v = copy.value;
    if (copy.reduce != Reduce::None || !is_load_of(v, result) ||
        v->args.size() != copy.out_idx.size())
      reject("a program with more than one output, not each a slice of one result");
    Window w;
    for (size_t p = 0; p < v->args.size(); ++p) {
      // result[..., var_p + offset_p, ...]
      auto a = P::affine(v->args[p]);
      const int64_t var = copy.out_vars[p];
      bool plain = a && (var < 0 ? a->coef.empty()
                                 : a->coef.size() == 1 && a->coef.count(var) && a->coef[var] == 1);
      if (!plain || a->constant < 0 || a->constant + copy.out->shape[p] > result->shape[p])
        reject("an output that is not a slice of the result");
      w.offset.push_back(a->constant);
      w.extent.push_back(copy.out->shape[p]);
    }
    StageProgram part = sp;
    part.stages.assign(sp.stages.begin(), sp.stages.begin() + static_cast<std::ptrdiff_t>(head));
    part.stages.push_back(copy);
    part.output_param = sp.param_of(copy.out);
    part.outputs = {part.output_param};
    part.window = w;
    parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end(), [](const StageProgram& a, const StageProgram& b) {
    return a.output_param < b.output_param;
  });
  return parts;
}

bool is_var(const P::Expr& e, int64_t* var) {
  if (!e || e->kind != P::ExprKind::Var) return false;
  if (var) *var = e->var_id;
  return true;
}

bool is_int(const P::Expr& e, int64_t value) {
  return static_cast<bool>(e) && e->kind == P::ExprKind::IntImm && e->int_value == value;
}

bool float_value(const P::Expr& e, double* v) {
  if (!e) return false;
  if (e->kind == P::ExprKind::FloatImm) {
    *v = e->float_value;
    return true;
  }
  if (e->kind == P::ExprKind::IntImm && !e->dtype.is_bool()) {
    *v = static_cast<double>(e->int_value);
    return true;
  }
  if (e->kind == P::ExprKind::Cast) return float_value(e->args[0], v);
  return false;
}

bool is_load_of(const P::Expr& e, const P::Buffer& b) {
  return static_cast<bool>(e) && e->kind == P::ExprKind::Load && e->buffer->id == b->id;
}

} // namespace mt::onednn
