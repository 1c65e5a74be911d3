// Block-visible accesses of a statement (shared_access.h).
#include "shared_access.h"

namespace mt::gpu_codegen {

void Accesses::merge(const Accesses& o) {
  for (const auto& [b, keys] : o.reads)
    reads[b].insert(keys.begin(), keys.end());
  for (const auto& [b, keys] : o.writes)
    writes[b].insert(keys.begin(), keys.end());
}

namespace {

void key_of(const P::Expr& e, std::string& out) {
  switch (e->kind) {
  case P::ExprKind::IntImm:
    out += std::to_string(e->int_value);
    return;
  case P::ExprKind::FloatImm:
    out += std::to_string(e->float_value);
    return;
  case P::ExprKind::Var:
    out += "v" + std::to_string(e->var_id);
    return;
  case P::ExprKind::Load:
    out += "L" + std::to_string(e->buffer->id);
    break;
  case P::ExprKind::Call:
    out += P::to_string(e->fn);
    break;
  default:
    out += P::to_string(e->kind);
    break;
  }
  out += '(';
  for (const auto& a : e->args) {
    key_of(a, out);
    out += ',';
  }
  out += ')';
}

} // namespace

std::string index_key(const std::vector<P::Expr>& indices) {
  std::string k;
  for (const auto& i : indices) {
    key_of(i, k);
    k += ';';
  }
  return k;
}

Accesses accesses_of(const P::Stmt& s, const std::function<bool(const P::Buffer&)>& visible,
                     const std::function<bool(const std::vector<P::Expr>&)>& distinct,
                     const std::function<bool(const P::Stmt&)>& in_registers) {
  Accesses a;
  auto key = [&](const std::vector<P::Expr>& indices) {
    return distinct(indices) ? index_key(indices) : std::string(kAnyThreadKey);
  };
  auto loads = [&](const P::Expr& e) {
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Load && visible(x->buffer))
        a.reads[x->buffer->id].insert(key(x->args));
    });
  };
  P::visit_stmts(s, [&](const P::Stmt& x) {
    if (x->kind == P::StmtKind::Store) {
      if (in_registers(x)) return true;
      if (visible(x->buffer)) a.writes[x->buffer->id].insert(key(x->indices));
      for (const auto& i : x->indices)
        loads(i);
      loads(x->value);
    } else if (x->kind == P::StmtKind::IfThenElse) {
      loads(x->condition);
    }
    return true;
  });
  return a;
}

bool conflicts(const Accesses& before, const Accesses& after) {
  auto clash = [](const std::set<std::string>& x, const std::set<std::string>& y) {
    std::set<std::string> all = x;
    all.insert(y.begin(), y.end());
    return all.size() > 1 || all.count(kAnyThreadKey);
  };
  auto keys = [](const std::map<int64_t, std::set<std::string>>& m, int64_t b) {
    auto it = m.find(b);
    return it == m.end() ? std::set<std::string>{} : it->second;
  };
  for (const auto& [b, w] : before.writes) {
    std::set<std::string> touched = keys(after.reads, b);
    std::set<std::string> aw = keys(after.writes, b);
    touched.insert(aw.begin(), aw.end());
    if (!touched.empty() && clash(w, touched)) return true;
  }
  for (const auto& [b, w] : after.writes) {
    std::set<std::string> r = keys(before.reads, b);
    if (!r.empty() && clash(w, r)) return true;
  }
  return false;
}

} // namespace mt::gpu_codegen
