// Weights whose copies are made once (see prepacked_weights.h).
#include "prepacked_weights.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "program_walk.h"

namespace mt::llvm_cpu {

namespace P = sdk::program;

namespace {

// What a program does with each buffer, by id.
struct Uses {
  std::unordered_map<int64_t, int64_t> loads, stores; // how many of each, by buffer
  int64_t max_id = 0;                                 // of the buffers: a new one takes a larger id

  explicit Uses(const P::Program& p) {
    for (const P::Buffer& b : p.params)
      max_id = std::max(max_id, b->id);
    P::visit_stmts(p.body, [&](const P::Stmt& s) {
      if (s->buffer) max_id = std::max(max_id, s->buffer->id);
      if (s->kind == P::StmtKind::Store) ++stores[s->buffer->id];
      for (const P::Expr& i : s->indices)
        count(i);
      count(s->value);
      count(s->condition);
      return true;
    });
  }

  void count(const P::Expr& e) {
    if (!e) return;
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Load) {
        ++loads[x->buffer->id];
        max_id = std::max(max_id, x->buffer->id);
      }
    });
  }
};

bool reads_memory(const P::Expr& e) {
  bool found = false;
  P::post_order_visit(e, [&](const P::Expr& x) { found = found || x->kind == P::ExprKind::Load; });
  return found;
}

// Whether `s` loads buffer `id` anywhere.
bool reads_buffer(const P::Stmt& s, int64_t id) {
  bool found = false;
  auto look = [&](const P::Expr& e) {
    if (e)
      P::post_order_visit(e, [&](const P::Expr& x) {
        found = found || (x->kind == P::ExprKind::Load && x->buffer->id == id);
      });
  };
  P::visit_stmts(s, [&](const P::Stmt& st) {
    for (const P::Expr& i : st->indices)
      look(i);
    look(st->value);
    look(st->condition);
    return !found;
  });
  return found;
}

// The load of `weight` a copy's value is: the load itself (or, once laid out, under a cast).
const P::ExprNode* weight_load(const P::Expr& value, int64_t weight) {
  const P::ExprNode* v = value.get();
  if (v->kind == P::ExprKind::Cast) v = v->args[0].get();
  return v->kind == P::ExprKind::Load && v->buffer->id == weight ? v : nullptr;
}

// A copy nest of `weight` into buffer `copy`: loops, each holding only the next, around one
// store `copy[..] = weight[..]` at indices that read no memory.
bool is_copy_nest(const P::Stmt& s, const P::BufferNode& copy, const P::BufferNode& weight) {
  const P::StmtNode* st = s.get();
  while (st && st->kind == P::StmtKind::For)
    st = only_stmt(st->body);
  if (!st || st->kind != P::StmtKind::Store || st->buffer->id != copy.id) return false;
  const P::ExprNode* l = weight_load(st->value, weight.id);
  if (!l || !(st->value->dtype == weight.dtype)) return false;
  for (const P::Expr& i : st->indices)
    if (reads_memory(i)) return false;
  for (const P::Expr& i : l->args)
    if (reads_memory(i)) return false;
  return true;
}

// Where a program allocates a buffer: the loops around the allocation (outermost first), and
// the copy nests that open its body.
struct Site {
  const P::StmtNode* allocate = nullptr;
  std::vector<const P::StmtNode*> outer;
  std::vector<P::Stmt> copies;
};

// Every allocation of `p` that only loops enclose (none under a condition), by buffer id.
std::unordered_map<int64_t, Site> allocation_sites(const P::Program& p) {
  std::unordered_map<int64_t, Site> out;
  std::vector<const P::StmtNode*> loops;
  std::function<void(const P::Stmt&)> walk = [&](const P::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case P::StmtKind::For:
      loops.push_back(s.get());
      walk(s->body);
      loops.pop_back();
      break;
    case P::StmtKind::Seq:
      for (const P::Stmt& x : s->stmts)
        walk(x);
      break;
    case P::StmtKind::Allocate:
      out[s->buffer->id] = Site{s.get(), loops, {}};
      walk(s->body);
      break;
    default: // a condition's branches: not every iteration allocates
      break;
    }
  };
  walk(p.body);
  return out;
}

// `s` with every store into `from` storing into `to` at `prefix` + its indices, and every load
// of `from` reading `to` so.
P::Stmt redirected(const P::Stmt& s, int64_t from, const P::Buffer& to,
                   const std::vector<P::Expr>& prefix) {
  auto at = [&](const std::vector<P::Expr>& indices) {
    std::vector<P::Expr> out = prefix;
    out.insert(out.end(), indices.begin(), indices.end());
    return out;
  };
  std::function<P::Expr(const P::Expr&)> expr = [&](const P::Expr& e) -> P::Expr {
    if (!e || e->args.empty()) return e;
    auto n = std::make_shared<P::ExprNode>(*e);
    for (P::Expr& a : n->args)
      a = expr(a);
    if (e->kind == P::ExprKind::Load && e->buffer->id == from) {
      n->buffer = to;
      n->args = at(n->args);
    }
    return P::Expr(std::move(n));
  };
  return map_stmts(s, expr, [&](const P::StmtNode& old, P::StmtNode& n) {
    if (old.kind != P::StmtKind::Store || old.buffer->id != from) return;
    n.buffer = to;
    n.indices = at(n.indices);
  });
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string indices_text(const std::vector<P::Expr>& indices) {
  std::string s = "[";
  for (size_t i = 0; i < indices.size(); ++i)
    s += (i ? ", " : "") + P::to_string(indices[i]);
  return s + "]";
}

// The pack program's loops and copies in one line: what its packed bytes hold.
std::string copy_text(const P::Stmt& s, int64_t weight) {
  switch (s->kind) {
  case P::StmtKind::For:
    return "for " + P::to_string(s->loop_var) + " < " + std::to_string(s->extent) + ": " +
           copy_text(s->body, weight);
  case P::StmtKind::Seq: {
    std::string t = "{";
    for (size_t i = 0; i < s->stmts.size(); ++i)
      t += (i ? "; " : "") + copy_text(s->stmts[i], weight);
    return t + "}";
  }
  case P::StmtKind::Store:
    return indices_text(s->indices) + " = " + indices_text(weight_load(s->value, weight)->args);
  default:
    return "?";
  }
}

// The param's copy: where the program reads the param only in copy nests into one buffer that
// open that buffer's allocation, and nothing else writes the buffer.
std::optional<PrepackedWeight> prepackable(const P::Program& p, size_t param, const Uses& uses,
                                           const std::unordered_map<int64_t, Site>& sites,
                                           const AmxRoles& roles) {
  const P::Buffer& w = p.params[param];
  if (w->shape.size() < 2 || !w->dtype.is_float() || uses.stores.count(w->id)) return {};
  auto loads = uses.loads.find(w->id);
  if (loads == uses.loads.end()) return {};
  // The buffer the first load of the weight is copied into.
  P::Buffer copy;
  P::visit_stmts(p.body, [&](const P::Stmt& s) {
    if (!copy && s->kind == P::StmtKind::Store && weight_load(s->value, w->id)) copy = s->buffer;
    return !copy;
  });
  if (!copy || !(copy->dtype == w->dtype)) return {};
  auto site_it = sites.find(copy->id);
  if (site_it == sites.end()) return {};
  Site site = site_it->second;
  // The allocation's body, past the allocations made at the same place (a schedule's other
  // caches), as a sequence: its copy nests before anything reads the buffer.
  P::Stmt body = site.allocate->body;
  while (body && body->kind == P::StmtKind::Allocate)
    body = body->body;
  if (!body) return {};
  const std::vector<P::Stmt> opening =
      body->kind == P::StmtKind::Seq ? body->stmts : std::vector<P::Stmt>{body};
  for (const P::Stmt& s : opening) {
    if (is_copy_nest(s, *copy, *w)) {
      site.copies.push_back(s);
    } else if (reads_buffer(s, copy->id)) {
      break;
    }
  }
  // Those copies are every store into the buffer and every load of the weight: in each
  // iteration of the loops around the allocation, the buffer holds what they copied.
  const int64_t n = static_cast<int64_t>(site.copies.size());
  if (n == 0 || loads->second != n || uses.stores.at(copy->id) != n) return {};

  // The packed bytes: the buffer for each iteration of the loops around it that the copies
  // depend on, those loops outermost -- [loops.., the buffer's shape..].
  PrepackedWeight out;
  out.buffer = copy;
  std::vector<const P::StmtNode*> loops;
  for (const P::StmtNode* loop : site.outer) {
    bool used = false;
    for (const P::Stmt& c : site.copies)
      P::visit_stmts(c, [&](const P::Stmt& s) {
        if (s->kind == P::StmtKind::Store)
          for (const P::Expr& i : weight_load(s->value, w->id)->args)
            used = used || P::uses_var(i, loop->loop_var->var_id);
        return true;
      });
    if (used) loops.push_back(loop);
  }
  P::Program pack;
  pack.name = p.name + "_pack_" + std::to_string(param);
  pack.params = {w, copy};
  pack.body = P::make_seq(site.copies);
  auto role = roles.find(copy->id);
  if (role != roles.end()) {
    out.amx_role = role->second;
    pack = with_amx_layout(pack, {{copy->id, role->second}});
  }
  const P::Buffer& laid = pack.params[1];
  std::vector<int64_t> shape;
  for (const P::StmtNode* loop : loops) {
    shape.push_back(loop->extent);
    out.outer.push_back(loop->loop_var);
  }
  shape.insert(shape.end(), laid->shape.begin(), laid->shape.end());
  // (Ids of the SDK's trees are the host's: the packed buffer takes one none of them has.)
  out.packed = P::make_buffer(w->name + "_packed", laid->dtype, shape, "global",
                              uses.max_id + 1 + static_cast<int64_t>(param));
  pack.params[1] = out.packed;
  pack.body = redirected(pack.body, copy->id, out.packed, out.outer);
  for (size_t i = loops.size(); i-- > 0;)
    pack.body = P::make_for(loops[i]->loop_var, loops[i]->extent, pack.body,
                            loops[i]->for_kind == P::ForKind::Parallel ? P::ForKind::Parallel
                                                                       : P::ForKind::Serial);
  out.key = "llvm copy of " + P::to_string(w->dtype) + shape_text(w->shape) + " as " +
            P::to_string(laid->dtype) + shape_text(shape) +
            (out.amx_role ? out.amx_role == AmxRole::B ? " (AMX tile products' B, in pairs)"
                                                       : " (AMX tile products' A)"
                          : "") +
            ": " + copy_text(pack.body, w->id);
  out.pack = std::move(pack);
  return out;
}

// `s` without the stores into and the allocations of the buffers in `ids`; statements left
// empty go too (null where nothing is left).
P::Stmt without_buffers(const P::Stmt& s, const std::unordered_set<int64_t>& ids) {
  if (!s) return s;
  switch (s->kind) {
  case P::StmtKind::Store:
    return ids.count(s->buffer->id) ? nullptr : s;
  case P::StmtKind::Allocate:
    if (ids.count(s->buffer->id)) return without_buffers(s->body, ids);
    [[fallthrough]];
  case P::StmtKind::For: {
    P::Stmt body = without_buffers(s->body, ids);
    if (!body) return nullptr;
    auto n = std::make_shared<P::StmtNode>(*s);
    n->body = body;
    return n;
  }
  case P::StmtKind::Seq: {
    std::vector<P::Stmt> kept;
    for (const P::Stmt& x : s->stmts)
      if (P::Stmt y = without_buffers(x, ids)) kept.push_back(y);
    if (kept.empty()) return nullptr;
    auto n = std::make_shared<P::StmtNode>(*s);
    n->stmts = std::move(kept);
    return n;
  }
  case P::StmtKind::IfThenElse: {
    P::Stmt then_case = without_buffers(s->then_case, ids);
    P::Stmt else_case = without_buffers(s->else_case, ids);
    if (!then_case && !else_case) return nullptr;
    auto n = std::make_shared<P::StmtNode>(*s);
    n->then_case = then_case ? then_case : P::make_seq({});
    n->else_case = else_case;
    return n;
  }
  }
  return s;
}

} // namespace

std::vector<std::optional<PrepackedWeight>> prepackable_weights(const P::Program& p, bool amx) {
  const Uses uses(p);
  const auto sites = allocation_sites(p);
  const AmxRoles roles = amx ? amx_operand_roles(p) : AmxRoles{};
  std::vector<std::optional<PrepackedWeight>> out(p.params.size());
  for (size_t i = 0; i < p.params.size(); ++i)
    out[i] = prepackable(p, i, uses, sites, roles);
  return out;
}

P::Program with_prepacked_weights(const P::Program& p,
                                  const std::vector<std::optional<PrepackedWeight>>& weights,
                                  const std::vector<uint8_t>& which) {
  AmxRoles roles;
  std::unordered_set<int64_t> copies;
  for (size_t i = 0; i < weights.size() && i < which.size(); ++i)
    if (which[i] && weights[i]) {
      copies.insert(weights[i]->buffer->id);
      if (weights[i]->amx_role) roles.emplace(weights[i]->buffer->id, *weights[i]->amx_role);
    }
  if (copies.empty()) return p;
  P::Program out = with_amx_layout(p, roles);
  out.body = without_buffers(out.body, copies);
  if (!out.body) out.body = P::make_seq({});
  for (size_t i = 0; i < weights.size() && i < which.size(); ++i)
    if (which[i] && weights[i]) {
      const PrepackedWeight& w = *weights[i];
      out.body = redirected(out.body, w.buffer->id, w.packed, w.outer);
      out.params[i] = w.packed;
    }
  return out;
}

} // namespace mt::llvm_cpu
