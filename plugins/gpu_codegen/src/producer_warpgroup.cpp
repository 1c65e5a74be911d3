// producer_warpgroup.cpp: where a TMA pipeline can be warp-specialised (producer_warpgroup.h).
#include "producer_warpgroup.h"

#include <set>
#include <variant>

namespace mt::gpu_codegen {

namespace {

using P::StmtKind;

int64_t int_annotation(const P::StmtNode& loop, const char* key) {
  auto it = loop.annotations.find(key);
  if (it == loop.annotations.end()) return 0;
  const auto* n = std::get_if<int64_t>(&it->second);
  return n ? *n : 0;
}

// The walk from the kernel's top to the pipeline, with the thread variables bound on the way.
class Planner {
public:
  Planner(const std::function<const TmaCopy*(const P::StmtNode*)>& tma_copy_of, std::string* why)
      : tma_copy_of_(tma_copy_of), why_(why) {}

  std::optional<ProducerPlan> run(const P::Stmt& body) {
    if (!path(body)) return std::nullopt;
    if (!plan_.prologue || !plan_.pipeline) {
      fail("no pipeline with a prologue");
      return std::nullopt;
    }
    if (!slots_follow_tiles(*plan_.prologue, 0) ||
        !slots_follow_tiles(*plan_.pipeline, plan_.stages - 1))
      return std::nullopt;
    return plan_;
  }

private:
  bool is_tma_copy_(const P::StmtNode* n) const { return tma_copy_of_(n) != nullptr; }

  // Iteration i of `loop` (its copies under whatever guard) fetches tile i + ahead into slot
  // (i + ahead) % slots; iterations whose tile is past the pipeline's last fetch none.
  bool slots_follow_tiles(const P::StmtNode& loop, int64_t ahead) {
    const int64_t slots = plan_.stages + plan_.spare;
    const int64_t tiles = plan_.pipeline->extent;
    bool ok = true;
    P::visit_stmts(loop.body, [&](const P::Stmt& x) {
      const TmaCopy* c = tma_copy_of_(x.get());
      if (!c || !ok) return ok;
      for (int64_t i = 0; i < loop.extent && i + ahead < tiles; ++i) {
        std::unordered_map<int64_t, int64_t> env = c->boxes.front().first;
        env[loop.loop_var->var_id] = i;
        const std::optional<int64_t> slot = evaluate_index(c->store->indices[0], env);
        if (!slot || *slot != (i + ahead) % slots) {
          ok = false;
          fail("a copy's slot is not its tile's (iteration " + std::to_string(i) + " of `" +
               loop.loop_var->name + "`)");
          break;
        }
      }
      return false;
    });
    return ok;
  }

  // Records the first reason the plan is refused; false, for `return fail(...)`.
  bool fail(const std::string& why) {
    if (why_ && why_->empty()) *why_ = why;
    return false;
  }

  bool contains_copy(const P::Stmt& s) const {
    bool found = false;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      found = found || is_tma_copy_(x.get());
      return !found;
    });
    return found;
  }

  // Every store under `s` belongs to a TMA copy, and no copy reads a thread index bound
  // around it (the producer has none of the consumers' indices).
  bool only_copies(const P::Stmt& s) {
    if (!s) return true;
    if (is_tma_copy_(s.get())) {
      return !uses_thread_var(s) || fail("a copy depends on the index of a thread");
    }
    if (s->kind == StmtKind::Store)
      return fail("the pipeline's fetch does more than its TMA copies");
    if (s->kind == StmtKind::IfThenElse && uses_thread_var(s->condition))
      return fail("a fetch under a condition on a thread index");
    for (const auto& c : s->stmts)
      if (!only_copies(c)) return false;
    return only_copies(s->then_case) && only_copies(s->else_case) && only_copies(s->body);
  }

  bool uses_thread_var(const P::Expr& e) const {
    if (!e) return false;
    for (int64_t v : thread_vars_)
      if (P::uses_var(e, v)) return true;
    return false;
  }
  bool uses_thread_var(const P::Stmt& s) const {
    bool used = false;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      for (const auto& i : x->indices)
        used = used || uses_thread_var(i);
      used = used || uses_thread_var(x->value) || uses_thread_var(x->condition);
      return !used;
    });
    return used;
  }

  bool writes_shared(const P::Stmt& s) const {
    bool found = false;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      found = found || (x->kind == StmtKind::Store && x->buffer->scope == "shared");
      return !found;
    });
    return found;
  }

  bool pipelined_loop(const P::Stmt& loop) {
    if (plan_.pipeline) return fail("two pipelines");
    std::vector<P::Stmt> items =
        loop->body->kind == StmtKind::Seq ? loop->body->stmts : std::vector<P::Stmt>{loop->body};
    if (items.size() < 2 || !contains_copy(items[0]))
      return fail("the pipelined loop's first statement is not its fetch");
    if (!only_copies(items[0])) return false;
    for (size_t i = 1; i < items.size(); ++i)
      if (contains_copy(items[i]) || writes_shared(items[i]))
        return fail("the pipelined loop's products write shared memory");
    plan_.pipeline = loop.get();
    plan_.stages = int_annotation(*loop, P::kSoftwarePipelineStages);
    plan_.spare = int_annotation(*loop, P::kSoftwarePipelineSpareSlots);
    if (plan_.stages < 2) return fail("a pipeline of fewer than 2 stages");
    return true;
  }

  bool path(const P::Stmt& s) {
    if (!s || !contains_copy(s)) return true;
    if (is_tma_copy_(s.get())) return fail("a TMA copy outside the pipeline");
    switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->stmts)
        if (!path(c)) return false;
      return true;
    case StmtKind::Allocate:
      return path(s->body);
    case StmtKind::IfThenElse:
      if (uses_thread_var(s->condition))
        return fail("the pipeline is under a condition on a thread index");
      return path(s->then_case) && path(s->else_case);
    case StmtKind::For: {
      if (s->annotations.count(P::kSoftwarePipelinePrologue)) {
        if (plan_.prologue) return fail("two prologues");
        plan_.prologue = s.get();
        return only_copies(s->body);
      }
      if (s->annotations.count(P::kSoftwarePipelineStages)) return pipelined_loop(s);
      if (s->for_kind == P::ForKind::ThreadBinding) {
        if (s->thread_tag.rfind("vthread", 0) == 0)
          return fail("the pipeline is under a virtual thread");
        const bool thread = s->thread_tag.rfind("threadIdx", 0) == 0;
        if (thread) thread_vars_.insert(s->loop_var->var_id);
        const bool ok = path(s->body);
        if (thread) thread_vars_.erase(s->loop_var->var_id);
        return ok;
      }
      if (s->extent == 1) return path(s->body);
      return fail("the pipeline is under a loop of " + std::to_string(s->extent) + " iterations");
    }
    default:
      return fail("a TMA copy under an unexpected statement");
    }
  }

  const std::function<const TmaCopy*(const P::StmtNode*)>& tma_copy_of_;
  std::string* why_;
  std::set<int64_t> thread_vars_;
  ProducerPlan plan_;
};

} // namespace

std::optional<ProducerPlan>
plan_producer(const P::Stmt& body,
              const std::function<const TmaCopy*(const P::StmtNode*)>& tma_copy_of,
              std::string* why) {
  return Planner(tma_copy_of, why).run(body);
}

} // namespace mt::gpu_codegen
