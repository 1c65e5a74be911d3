#include "core/ir/stmt.h"

#include <stdexcept>

#include "core/support/check.h"

namespace mt {

const char* to_string(ForKind k) {
  const char* text = mt_for_kind_text(static_cast<mt_for_kind>(k));
  return text ? text : "?";
}

bool parse_for_kind(std::string_view s, ForKind* out) {
#define MT_MATCH_FOR_KIND_(name, cpp, value, text)                                                 \
  if (s == text) {                                                                                 \
    *out = ForKind::cpp;                                                                           \
    return true;                                                                                   \
  }
  MT_FOR_KINDS(MT_MATCH_FOR_KIND_)
#undef MT_MATCH_FOR_KIND_
  return false;
}

const char* to_string(IterKind k) {
  const char* text = mt_iter_kind_text(static_cast<mt_iter_kind>(k));
  return text ? text : "?";
}

Stmt make_for(Expr var, int64_t extent, Stmt body, ForKind kind, std::string thread_tag,
              Annotations ann) {
  auto n = std::make_shared<ForNode>();
  n->loop_var = std::move(var);
  n->extent = extent;
  n->body = std::move(body);
  n->for_kind = kind;
  n->thread_tag = std::move(thread_tag);
  n->annotations = std::move(ann);
  return n;
}

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s) continue;
    if (s->kind == StmtKind::Seq) {
      for (auto& c : as<SeqNode>(s)->stmts) flat.push_back(c);
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(flat);
  return n;
}

Stmt make_store(Buffer buf, std::vector<Expr> indices, Expr value) {
  if (indices.size() != buf->shape.size())
    throw std::invalid_argument("store to " + buf->name + ": " + std::to_string(indices.size()) +
                                " indices for rank " + std::to_string(buf->shape.size()));
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(buf);
  n->indices = std::move(indices);
  n->value = make_cast(n->buffer->dtype, std::move(value));
  return n;
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  auto n = std::make_shared<IfThenElseNode>();
  n->condition = std::move(cond);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return n;
}

Stmt make_allocate(Buffer buf, Stmt body) {
  auto n = std::make_shared<AllocateNode>();
  n->buffer = std::move(buf);
  n->body = std::move(body);
  return n;
}

Stmt make_block_realize(std::vector<Expr> iter_values, Expr predicate, Block block) {
  if (iter_values.size() != block.iter_vars.size())
    throw std::invalid_argument("block " + block.name + ": " +
                                std::to_string(iter_values.size()) + " bindings for " +
                                std::to_string(block.iter_vars.size()) + " iter vars");
  auto n = std::make_shared<BlockRealizeNode>();
  n->iter_values = std::move(iter_values);
  n->predicate = std::move(predicate);
  n->block = std::make_shared<const Block>(std::move(block));
  return n;
}

Stmt with_body(const Stmt& s, Stmt body) {
  if (s->kind == StmtKind::For) {
    auto n = std::make_shared<ForNode>(*as<ForNode>(s));
    n->body = std::move(body);
    return n;
  }
  if (s->kind == StmtKind::Allocate) {
    auto n = std::make_shared<AllocateNode>(*as<AllocateNode>(s));
    n->body = std::move(body);
    return n;
  }
  MT_ICHECK(false, "with_body of a ", static_cast<int>(s->kind),
            " statement (only For and Allocate have one)");
  return s;
}

Stmt with_for_kind(const Stmt& s, ForKind kind, std::string thread_tag) {
  auto n = std::make_shared<ForNode>(*as<ForNode>(s));
  n->for_kind = kind;
  n->thread_tag = std::move(thread_tag);
  return n;
}

Stmt with_annotations(const Stmt& s, Annotations ann) {
  auto n = std::make_shared<ForNode>(*as<ForNode>(s));
  n->annotations = std::move(ann);
  return n;
}

std::vector<Stmt> children(const Stmt& s) {
  switch (s->kind) {
  case StmtKind::For: return {as<ForNode>(s)->body};
  case StmtKind::Seq: return as<SeqNode>(s)->stmts;
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    if (n->else_case) return {n->then_case, n->else_case};
    return {n->then_case};
  }
  case StmtKind::Allocate: return {as<AllocateNode>(s)->body};
  default: return {};
  }
}

void visit_stmts(const Stmt& s, const std::function<bool(const Stmt&)>& f) {
  if (!s) return;
  if (!f(s)) return;
  any_child(s, [&](const Stmt& c, int) {
    visit_stmts(c, f);
    return false;
  });
}

Stmt transform_stmts(const Stmt& s, const std::function<Stmt(const Stmt&)>& f) {
  if (!s) return s;
  switch (s->kind) {
  case StmtKind::For:
  case StmtKind::Allocate: {
    const Stmt& body = s->kind == StmtKind::For ? as<ForNode>(s)->body : as<AllocateNode>(s)->body;
    Stmt nb = transform_stmts(body, f);
    return f(nb == body ? s : with_body(s, nb));
  }
  case StmtKind::Seq: {
    bool changed = false;
    std::vector<Stmt> items;
    for (const Stmt& c : as<SeqNode>(s)->stmts) {
      items.push_back(transform_stmts(c, f));
      changed = changed || items.back() != c;
    }
    return f(changed ? make_seq(std::move(items)) : s);
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    Stmt t = transform_stmts(n->then_case, f);
    Stmt e = transform_stmts(n->else_case, f);
    return f(t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e));
  }
  default: return f(s);
  }
}

namespace {

Stmt rewrite_exprs_shallow(const Stmt& s, const std::function<Expr(const Expr&)>& f) {
  switch (s->kind) {
  case StmtKind::Store: {
    auto* n = as<StoreNode>(s);
    auto m = std::make_shared<StoreNode>(*n);
    for (auto& i : m->indices) i = f(i);
    m->value = f(m->value);
    return m;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    return make_if(f(n->condition), n->then_case, n->else_case);
  }
  case StmtKind::BlockRealize: {
    auto* n = as<BlockRealizeNode>(s);
    std::vector<Expr> vals;
    for (auto& v : n->iter_values) vals.push_back(f(v));
    Block b = *n->block;
    if (b.init) b.init = transform_exprs(b.init, f);
    b.body = transform_exprs(b.body, f);
    return make_block_realize(std::move(vals), n->predicate ? f(n->predicate) : Expr(), b);
  }
  default: return s;
  }
}

} // namespace

Stmt transform_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f) {
  return transform_stmts(s, [&](const Stmt& x) { return rewrite_exprs_shallow(x, f); });
}

Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  return transform_exprs(s, [&](const Expr& e) { return substitute(e, vmap); });
}

} // namespace mt

#include "core/ir/function.h"

namespace mt {

std::vector<bool> Function::output_mask() const {
  std::vector<bool> mask(params.size(), false);
  visit_stmts(body, [&](const Stmt& s) {
    auto mark = [&](const Stmt& st) {
      visit_stmts(st, [&](const Stmt& x) {
        if (x->kind == StmtKind::Store)
          for (size_t i = 0; i < params.size(); ++i)
            if (as<StoreNode>(x)->buffer == params[i]) mask[i] = true;
        return true;
      });
    };
    if (s->kind == StmtKind::Store) mark(s);
    if (s->kind == StmtKind::BlockRealize) {
      mark(as<BlockRealizeNode>(s)->block->body);
      if (as<BlockRealizeNode>(s)->block->init) mark(as<BlockRealizeNode>(s)->block->init);
    }
    return true;
  });
  return mask;
}

} // namespace mt
