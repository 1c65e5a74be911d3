// Splitting a lowered program into host steps and kernels (kernel_plan.hpp).
#include "metatune/gpu_codegen/kernel_plan.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace mt::gpu_codegen {

bool parse_thread_tag(const std::string& tag, bool* is_block, int* dim) {
  auto dim_of = [&](size_t at) {
    if (tag.size() != at + 1) return false;
    char c = tag[at];
    if (c < 'x' || c > 'z') return false;
    *dim = c - 'x';
    return true;
  };
  if (tag.rfind("blockIdx.", 0) == 0) {
    *is_block = true;
    return dim_of(9);
  }
  if (tag.rfind("threadIdx.", 0) == 0) {
    *is_block = false;
    return dim_of(10);
  }
  return false;
}

namespace {

bool has_binding(const P::Stmt& s) {
  bool found = false;
  P::visit_stmts(s, [&](const P::Stmt& x) {
    if (x->kind == P::StmtKind::For && x->for_kind == P::ForKind::ThreadBinding) found = true;
    return !found;
  });
  return found;
}

class Planner {
public:
  explicit Planner(KernelPlan& plan) : plan_(plan) {}

  void host(const P::Stmt& s, std::vector<HostStep>& out) {
    if (!s) return;
    switch (s->kind) {
    case P::StmtKind::Seq:
      for (const auto& c : s->stmts)
        host(c, out);
      return;
    case P::StmtKind::Allocate:
      // Whatever the scope, storage above every kernel is device memory for the whole call.
      plan_.buffers.push_back(s->buffer);
      host(s->body, out);
      return;
    case P::StmtKind::For:
      if (s->for_kind != P::ForKind::ThreadBinding && has_binding(s->body)) {
        HostStep loop;
        loop.loop_var = s->loop_var;
        loop.extent = s->extent;
        host_vars_.push_back(s->loop_var);
        host(s->body, loop.body);
        host_vars_.pop_back();
        out.push_back(std::move(loop));
        return;
      }
      break;
    case P::StmtKind::IfThenElse:
      if (has_binding(s))
        throw UnsupportedError("a condition on the host around thread-bound loops (" +
                               P::to_string(s->condition) + ")");
      break;
    case P::StmtKind::Store:
      break;
    }
    HostStep launch;
    launch.kernel = add_kernel(s);
    out.push_back(std::move(launch));
  }

private:
  int add_kernel(const P::Stmt& s) {
    Kernel k;
    k.name = plan_.name + "_kernel" + std::to_string(plan_.kernels.size());
    k.body = s;
    std::unordered_set<int64_t> used;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      if (x->kind == P::StmtKind::For && x->for_kind == P::ForKind::ThreadBinding) {
        bool block = false;
        int dim = 0;
        if (parse_thread_tag(x->thread_tag, &block, &dim)) {
          int64_t& e = block ? k.dims.grid[dim] : k.dims.block[dim];
          e = std::max(e, x->extent);
        } else if (x->thread_tag.rfind("vthread", 0) != 0) {
          throw UnsupportedError("unknown thread tag '" + x->thread_tag + "'");
        }
      }
      auto note = [&](const P::Expr& e) {
        P::post_order_visit(e, [&](const P::Expr& v) {
          if (v->kind == P::ExprKind::Var) used.insert(v->var_id);
        });
      };
      for (const auto& i : x->indices)
        note(i);
      note(x->value);
      note(x->condition);
      return true;
    });
    for (const auto& v : host_vars_)
      if (used.count(v->var_id)) k.host_vars.push_back(v);
    plan_.kernels.push_back(std::move(k));
    return static_cast<int>(plan_.kernels.size()) - 1;
  }

  KernelPlan& plan_;
  std::vector<P::Expr> host_vars_;
};

} // namespace

KernelPlan plan_kernels(const P::Program& program) {
  KernelPlan plan;
  plan.name = program.name.empty() ? "mt" : program.name;
  for (char& c : plan.name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  if (std::isdigit(static_cast<unsigned char>(plan.name[0]))) plan.name = "k" + plan.name;
  P::Program p = P::with_free_buffers_allocated(program);
  plan.buffers = p.params;
  plan.num_params = p.params.size();
  Planner(plan).host(p.body, plan.steps);
  // Index arithmetic stays well inside 32 bits when no buffer and no allocation comes near
  // 2^31 elements (a margin for the intermediate terms of an index expression).
  constexpr int64_t kLimit = int64_t{1} << 28;
  auto check = [&](const P::Buffer& b) {
    if (b->num_elements() >= kLimit) plan.index32 = false;
    // 64-bit integer data: the IR's i64 is also the index type, so narrowing indices would
    // narrow the data with them.
    if (b->dtype.is_int() && b->dtype.bits == 64) plan.index32 = false;
  };
  for (const auto& b : plan.buffers)
    check(b);
  auto casts_to_64 = [&](const P::Expr& e) {
    if (e)
      P::post_order_visit(e, [&](const P::Expr& x) {
        if (x->kind == P::ExprKind::Cast && x->dtype.is_int() && x->dtype.bits == 64)
          plan.index32 = false; // 64-bit integer data computed in the kernel
      });
  };
  for (const auto& k : plan.kernels)
    P::visit_stmts(k.body, [&](const P::Stmt& s) {
      for (const auto& i : s->indices)
        casts_to_64(i);
      casts_to_64(s->value);
      casts_to_64(s->condition);
      if (s->kind == P::StmtKind::Allocate) check(s->buffer);
      if (s->kind == P::StmtKind::For && s->extent >= kLimit) plan.index32 = false;
      return true;
    });
  return plan;
}

void run_host_steps(const KernelPlan& plan,
                    const std::function<void(int, const std::vector<int64_t>&)>& launch) {
  std::map<int64_t, int64_t> values;
  std::function<void(const std::vector<HostStep>&)> run = [&](const std::vector<HostStep>& steps) {
    for (const HostStep& s : steps) {
      if (s.kernel >= 0) {
        std::vector<int64_t> args;
        for (const auto& v : plan.kernels[static_cast<size_t>(s.kernel)].host_vars)
          args.push_back(values.at(v->var_id));
        launch(s.kernel, args);
        continue;
      }
      for (int64_t i = 0; i < s.extent; ++i) {
        values[s.loop_var->var_id] = i;
        run(s.body);
      }
    }
  };
  run(plan.steps);
}

} // namespace mt::gpu_codegen
