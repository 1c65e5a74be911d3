// Lowering pass 2: allocation placement. Each intermediate buffer is allocated around the body
// of the deepest loop that encloses all of its accesses, so that it lives no longer than needed
// and is private to each iteration of the loops above it (per-thread under parallel loops).
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/lower/lower.h"
#include "core/support/check.h"

namespace mt {

namespace {

bool is_thread_idx(const ForNode* f) {
  return f->for_kind == ForKind::ThreadBinding && f->thread_tag.rfind("threadIdx", 0) == 0;
}

// For each buffer of interest: the For loops (outermost first) common to all its accesses.
class LcaFinder {
public:
  explicit LcaFinder(const std::unordered_set<const BufferNode*>& wanted) : wanted_(wanted) {}

  void visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::For:
      stack_.push_back(as<ForNode>(s));
      visit(as<ForNode>(s)->body);
      stack_.pop_back();
      return;
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      access(n->buffer.get());
      for (const Expr& i : n->indices)
        visit_expr(i);
      visit_expr(n->value);
      return;
    }
    case StmtKind::IfThenElse:
      visit_expr(as<IfThenElseNode>(s)->condition);
      break;
    case StmtKind::BlockRealize:
      MT_ICHECK(false, "place_allocations before lower_blocks (a block is left)");
      break;
    default:
      break;
    }
    for (const Stmt& c : children(s))
      visit(c);
  }

  std::unordered_map<const BufferNode*, std::vector<const ForNode*>> lca;

private:
  void visit_expr(const Expr& e) {
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load) access(x->buffer.get());
    });
  }
  void access(const BufferNode* b) {
    if (!wanted_.count(b)) return;
    auto it = lca.find(b);
    if (it == lca.end()) {
      lca.emplace(b, stack_);
      return;
    }
    auto& common = it->second;
    size_t n = 0;
    while (n < common.size() && n < stack_.size() && common[n] == stack_[n])
      ++n;
    common.resize(n);
  }

  const std::unordered_set<const BufferNode*>& wanted_;
  std::vector<const ForNode*> stack_;
};

// Device memory other than "local" cannot be private to a GPU thread: shared memory is shared
// by the threads of a block, global memory by the whole grid.
void lift_out_of_thread_loops(const Buffer& b, std::vector<const ForNode*>& loops) {
  for (size_t i = 0; i < loops.size(); ++i) {
    bool cut = (b->scope == "shared" && is_thread_idx(loops[i])) ||
               (b->scope == "global" && loops[i]->for_kind == ForKind::ThreadBinding);
    if (cut) {
      loops.resize(i);
      return;
    }
  }
}

Stmt wrap(Stmt body, const std::vector<Buffer>& bufs) {
  for (size_t i = bufs.size(); i-- > 0;)
    body = make_allocate(bufs[i], body);
  return body;
}

} // namespace

Stmt place_allocations(const Stmt& body, const std::vector<Buffer>& intermediates) {
  std::unordered_set<const BufferNode*> wanted;
  for (const Buffer& b : intermediates)
    wanted.insert(b.get());
  LcaFinder finder(wanted);
  finder.visit(body);

  std::vector<Buffer> at_root;
  std::unordered_map<const StmtNode*, std::vector<Buffer>> at_loop;
  for (const Buffer& b : intermediates) {
    auto it = finder.lca.find(b.get());
    if (it == finder.lca.end()) continue; // never accessed: nothing to allocate
    std::vector<const ForNode*> loops = it->second;
    lift_out_of_thread_loops(b, loops);
    if (loops.empty())
      at_root.push_back(b);
    else
      at_loop[loops.back()].push_back(b);
  }
  Stmt out = body;
  if (!at_loop.empty()) {
    // Loops are matched by identity in the original tree, so this walks it by hand
    // (transform_stmts would hand over rebuilt nodes).
    std::function<Stmt(const Stmt&)> rec = [&](const Stmt& s) -> Stmt {
      if (!s) return s;
      switch (s->kind) {
      case StmtKind::For: {
        auto* f = as<ForNode>(s);
        Stmt nb = rec(f->body);
        auto it = at_loop.find(s.get());
        if (it != at_loop.end()) nb = wrap(nb, it->second);
        return nb == f->body ? s : with_body(s, nb);
      }
      case StmtKind::Allocate: {
        Stmt nb = rec(as<AllocateNode>(s)->body);
        return nb == as<AllocateNode>(s)->body ? s : with_body(s, nb);
      }
      case StmtKind::Seq: {
        std::vector<Stmt> items;
        for (const Stmt& c : as<SeqNode>(s)->stmts)
          items.push_back(rec(c));
        return make_seq(std::move(items));
      }
      case StmtKind::IfThenElse: {
        auto* n = as<IfThenElseNode>(s);
        return make_if(n->condition, rec(n->then_case), rec(n->else_case));
      }
      default:
        return s;
      }
    };
    out = rec(body);
  }
  return wrap(out, at_root);
}

} // namespace mt
