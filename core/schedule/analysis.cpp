#include "core/schedule/analysis.h"

#include <algorithm>

namespace mt {

namespace {

void collect_buffers(const Stmt& s, bool writes, const BufferNode* exclude,
                     std::vector<Buffer>& out) {
  auto add = [&](const Buffer& b) {
    if (b.get() == exclude) return;
    if (std::none_of(out.begin(), out.end(), [&](const Buffer& x) { return x == b; }))
      out.push_back(b);
  };
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::Store) {
      auto* st = as<StoreNode>(x);
      if (writes) {
        add(st->buffer);
      } else {
        auto visit = [&](const Expr& e) {
          post_order_visit(e, [&](const Expr& n) {
            if (n->kind == ExprKind::Load) add(n->buffer);
          });
        };
        for (auto& i : st->indices) visit(i);
        visit(st->value);
      }
    } else if (x->kind == StmtKind::IfThenElse && !writes) {
      post_order_visit(as<IfThenElseNode>(x)->condition, [&](const Expr& n) {
        if (n->kind == ExprKind::Load) add(n->buffer);
      });
    }
    return true;
  });
}

} // namespace

std::vector<Buffer> block_writes(const Block& b) {
  std::vector<Buffer> out;
  if (b.init) collect_buffers(b.init, true, nullptr, out);
  collect_buffers(b.body, true, nullptr, out);
  return out;
}

std::vector<Buffer> block_reads(const Block& b) {
  std::vector<Buffer> writes = block_writes(b);
  std::vector<Buffer> out;
  collect_buffers(b.body, false, nullptr, out);
  if (b.init) collect_buffers(b.init, false, nullptr, out);
  std::erase_if(out, [&](const Buffer& x) {
    return std::find(writes.begin(), writes.end(), x) != writes.end();
  });
  return out;
}

std::vector<Expr> block_loads_of(const Block& b, const BufferNode* buf) {
  std::vector<Expr> out;
  auto scan = [&](const Stmt& s) {
    if (!s) return;
    visit_stmts(s, [&](const Stmt& x) {
      auto visit = [&](const Expr& e) {
        post_order_visit(e, [&](const Expr& n) {
          if (n->kind == ExprKind::Load && n->buffer.get() == buf) out.push_back(n);
        });
      };
      if (x->kind == StmtKind::Store) {
        for (auto& i : as<StoreNode>(x)->indices) visit(i);
        visit(as<StoreNode>(x)->value);
      } else if (x->kind == StmtKind::IfThenElse) {
        visit(as<IfThenElseNode>(x)->condition);
      }
      return true;
    });
  };
  scan(b.init);
  scan(b.body);
  return out;
}

bool block_reads_buffer(const Block& b, const BufferNode* buf) {
  return !block_loads_of(b, buf).empty();
}

bool block_writes_buffer(const Block& b, const BufferNode* buf) {
  for (auto& w : block_writes(b))
    if (w.get() == buf) return true;
  return false;
}

bool is_reduction_block(const Block& b) {
  return std::any_of(b.iter_vars.begin(), b.iter_vars.end(),
                     [](const IterVar& iv) { return iv.kind == IterKind::Reduce; });
}

std::vector<const ForNode*> StmtPath::loops() const {
  std::vector<const ForNode*> out;
  for (size_t i = 0; i + 1 < nodes.size(); ++i)
    if (nodes[i]->kind == StmtKind::For) out.push_back(as<ForNode>(nodes[i]));
  return out;
}

namespace {
// Nothing is recorded while searching (this runs after every primitive): the path is
// collected leaf first on the way back from the node found, and reversed once.
bool find_rec(const Stmt& s, int idx, const std::function<bool(const Stmt&)>& pred,
              StmtPath& path) {
  bool found =
      pred(s) || any_child(s, [&](const Stmt& c, int i) { return find_rec(c, i, pred, path); });
  if (found) {
    path.nodes.push_back(s);
    path.index.push_back(idx);
  }
  return found;
}
} // namespace

std::optional<StmtPath> find_path(const Stmt& root,
                                  const std::function<bool(const Stmt&)>& pred) {
  if (!root) return std::nullopt;
  StmtPath path;
  if (!find_rec(root, -1, pred, path)) return std::nullopt;
  std::reverse(path.nodes.begin(), path.nodes.end());
  std::reverse(path.index.begin(), path.index.end());
  return path;
}

std::optional<StmtPath> find_block(const Stmt& root, const std::string& name) {
  return find_path(root, [&](const Stmt& s) {
    return s->kind == StmtKind::BlockRealize && as<BlockRealizeNode>(s)->block->name == name;
  });
}

std::optional<StmtPath> find_loop(const Stmt& root, const ExprNode* loop_var) {
  return find_path(root, [&](const Stmt& s) {
    return s->kind == StmtKind::For && as<ForNode>(s)->loop_var.get() == loop_var;
  });
}

Stmt replace_child(const Stmt& parent, int i, Stmt child) {
  switch (parent->kind) {
  case StmtKind::For:
  case StmtKind::Allocate:
    if (!child) return nullptr;
    return with_body(parent, std::move(child));
  case StmtKind::Seq: {
    std::vector<Stmt> items = as<SeqNode>(parent)->stmts;
    items.erase(items.begin() + i);
    if (child) {
      // Splice a sequence in place so that trees stay flat (canonical for comparisons).
      std::vector<Stmt> ins =
          child->kind == StmtKind::Seq ? as<SeqNode>(child)->stmts : std::vector<Stmt>{child};
      items.insert(items.begin() + i, ins.begin(), ins.end());
    }
    if (items.empty()) return nullptr;
    if (items.size() == 1) return items[0];
    auto n = std::make_shared<SeqNode>();
    n->stmts = std::move(items);
    return n;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(parent);
    if (i == 0) {
      if (!child) return nullptr;
      return make_if(n->condition, std::move(child), n->else_case);
    }
    return make_if(n->condition, n->then_case, std::move(child));
  }
  default: return parent;
  }
}

Stmt replace_at(const StmtPath& path, Stmt replacement) {
  Stmt cur = std::move(replacement);
  for (size_t k = path.nodes.size() - 1; k > 0; --k)
    cur = replace_child(path.nodes[k - 1], path.index[k], cur);
  return cur;
}

std::vector<const BlockRealizeNode*> collect_blocks(const Stmt& root) {
  std::vector<const BlockRealizeNode*> out;
  visit_stmts(root, [&](const Stmt& s) {
    if (s->kind == StmtKind::BlockRealize) out.push_back(as<BlockRealizeNode>(s));
    return true;
  });
  return out;
}

std::vector<std::string> block_names_in_order(const Stmt& root) {
  std::vector<std::string> out;
  for (auto* br : collect_blocks(root)) out.push_back(br->block->name);
  return out;
}

} // namespace mt
