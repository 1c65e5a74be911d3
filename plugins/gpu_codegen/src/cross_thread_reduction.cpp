// Stores every thread of a dimension makes to one element, and the reductions among them
// (cross_thread_reduction.h).
#include "cross_thread_reduction.h"

#include <functional>

#include "shared_access.h"

namespace mt::gpu_codegen {

using P::ExprKind;
using P::StmtKind;

namespace {

std::string first_line(const P::Stmt& s) {
  std::string t = P::to_string(s);
  size_t nl = t.find('\n');
  return nl == std::string::npos ? t : t.substr(0, nl);
}

} // namespace

std::optional<Update> reduction_update(const P::Stmt& s) {
  const P::Expr& v = s->value;
  if (v->kind != ExprKind::Add && v->kind != ExprKind::Max && v->kind != ExprKind::Min)
    return std::nullopt;
  std::string key = index_key(s->indices);
  auto self = [&](const P::Expr& e) {
    return e->kind == ExprKind::Load && e->buffer->id == s->buffer->id && index_key(e->args) == key;
  };
  auto reads_self = [&](const P::Expr& e) {
    bool r = false;
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer->id == s->buffer->id) r = true;
    });
    return r;
  };
  for (int side = 0; side < 2; ++side) {
    const P::Expr& a = v->args[static_cast<size_t>(side)];
    const P::Expr& b = v->args[static_cast<size_t>(1 - side)];
    if (self(a) && !reads_self(b)) return Update{v->kind, b};
  }
  return std::nullopt;
}

bool reads_buffer(const P::Expr& e, int64_t id) {
  bool r = false;
  P::post_order_visit(e, [&](const P::Expr& x) {
    if (x->kind == ExprKind::Load && x->buffer->id == id) r = true;
  });
  return r;
}

bool uses_any(const P::Expr& e, const std::unordered_set<int64_t>& vars) {
  bool r = false;
  P::post_order_visit(e, [&](const P::Expr& x) {
    if (x->kind == ExprKind::Var && vars.count(x->var_id)) r = true;
  });
  return r;
}

bool uses_only(const P::Expr& e, const std::unordered_set<int64_t>& vars) {
  bool ok = true;
  P::post_order_visit(e, [&](const P::Expr& x) {
    if (x->kind == ExprKind::Var && !vars.count(x->var_id)) ok = false;
  });
  return ok;
}

namespace {

// A store under the loop (find_shared_target_stores) whose indices do not use the tag's
// variables, with those of the loops around it.
struct SameElementStore {
  P::Stmt store;
  std::unordered_set<int64_t> tag_vars;
};

// The stores under `loop` that every thread of its tag writes at the same element; stores
// into arrays allocated inside the loop are each thread's own.
std::vector<SameElementStore> same_element_stores(const P::Stmt& loop) {
  std::vector<SameElementStore> found;
  std::unordered_set<int64_t> inside_allocs;
  std::function<void(const P::Stmt&, std::unordered_set<int64_t>)> scan =
      [&](const P::Stmt& s, std::unordered_set<int64_t> tag_vars) {
        if (!s) return;
        switch (s->kind) {
        case StmtKind::For:
          if (s->for_kind == P::ForKind::ThreadBinding && s->thread_tag == loop->thread_tag)
            tag_vars.insert(s->loop_var->var_id);
          scan(s->body, tag_vars);
          return;
        case StmtKind::Seq:
          for (const auto& c : s->stmts)
            scan(c, tag_vars);
          return;
        case StmtKind::IfThenElse:
          scan(s->then_case, tag_vars);
          scan(s->else_case, tag_vars);
          return;
        case StmtKind::Allocate:
          inside_allocs.insert(s->buffer->id);
          scan(s->body, tag_vars);
          return;
        case StmtKind::Store: {
          bool indexed = false;
          for (const auto& i : s->indices)
            indexed = indexed || uses_any(i, tag_vars);
          if (!indexed && !inside_allocs.count(s->buffer->id)) found.push_back({s, tag_vars});
          return;
        }
        }
      };
  scan(loop, {});
  return found;
}

// The one reduction among `found` (its updates), or none; the stores that are not updates go
// to `rest`. More than one reduction, one across blocks, or one into an element chosen inside
// the loop cannot run.
std::optional<CrossThreadReduction> the_reduction(const std::vector<SameElementStore>& found,
                                                  bool is_block, const std::string& where,
                                                  const std::unordered_set<int64_t>& private_ids,
                                                  const std::unordered_set<int64_t>& scope_vars,
                                                  std::vector<SameElementStore>& rest) {
  std::optional<CrossThreadReduction> xr;
  for (const SameElementStore& f : found) {
    auto u = reduction_update(f.store);
    if (!u) {
      rest.push_back(f);
      continue;
    }
    if (is_block)
      throw UnsupportedError("a reduction into '" + f.store->buffer->name +
                             "' across the blocks of " + where);
    std::string key = index_key(f.store->indices);
    if (xr && (xr->buffer_id != f.store->buffer->id || xr->key != key ||
               xr->combiner != u->combiner || xr->update != f.store))
      throw UnsupportedError("more than one reduction across the threads of " + where);
    if (!xr) {
      xr = CrossThreadReduction{};
      xr->buffer_id = f.store->buffer->id;
      xr->key = key;
      xr->combiner = u->combiner;
      xr->update = f.store;
      xr->broadcast = private_ids.count(f.store->buffer->id) > 0;
      for (const auto& i : f.store->indices)
        if (!uses_only(i, scope_vars))
          throw UnsupportedError("a reduction across the threads of " + where +
                                 " into an element chosen inside the loop ('" +
                                 f.store->buffer->name + "')");
    }
  }
  return xr;
}

// The other same-element stores: the reduction's initialisations (the same value for every
// thread, into its target) join `xr`; a store of one value for every thread is harmless;
// anything else cannot run.
void place_other_stores(const std::vector<SameElementStore>& rest, const std::string& where,
                        const std::unordered_set<int64_t>& private_ids,
                        const std::unordered_set<int64_t>& scope_vars,
                        std::optional<CrossThreadReduction>& xr) {
  for (const SameElementStore& f : rest) {
    const P::Stmt& st = f.store;
    bool same_target =
        xr.has_value() && st->buffer->id == xr->buffer_id && index_key(st->indices) == xr->key;
    // A value read from a thread's private array may differ between threads.
    bool reads_private = false;
    P::post_order_visit(st->value, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Load && private_ids.count(x->buffer->id)) reads_private = true;
    });
    bool uniform_value = !uses_any(st->value, f.tag_vars) &&
                         !reads_buffer(st->value, st->buffer->id) && !reads_private;
    if (same_target && uniform_value && uses_only(st->value, scope_vars)) {
      if (static_cast<bool>(xr->init_value) &&
          P::to_string(xr->init_value) != P::to_string(st->value))
        throw UnsupportedError("two different initial values of a reduction across " + where);
      xr->inits.push_back(st);
      xr->init_value = st->value;
      continue;
    }
    if (!same_target && uniform_value) continue; // every thread writes the same value
    throw UnsupportedError("every thread of " + where + " writes '" + st->buffer->name +
                           "' at the same index (`" + first_line(st) + "`)");
  }
}

// Only the update itself may read the target: anything else in the loop would see a thread's
// partial instead of the combined value.
void check_only_the_update_reads(const P::Stmt& loop, const CrossThreadReduction& xr,
                                 const std::string& where) {
  int reads = 0;
  auto count = [&](const P::Expr& e) {
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer->id == xr.buffer_id) ++reads;
    });
  };
  P::visit_stmts(loop, [&](const P::Stmt& x) {
    for (const auto& i : x->indices)
      count(i);
    if (x->value) count(x->value);
    if (x->condition) count(x->condition);
    return true;
  });
  if (reads > 1)
    throw UnsupportedError("the result of the reduction across " + where + " ('" +
                           xr.update->buffer->name + "') is read inside the loop that reduces it");
}

} // namespace

// Stores under the outermost loop of a thread tag whose indices do not depend on that tag:
// every thread of the dimension writes the same element. Harmless when they all write the
// same value; a reduction across threads when it is an update of a reduction; otherwise the
// program cannot run on a GPU as written.
std::optional<CrossThreadReduction>
find_shared_target_stores(const P::Stmt& loop, bool is_block,
                          const std::unordered_set<int64_t>& private_ids,
                          const std::unordered_set<int64_t>& scope_vars) {
  std::vector<SameElementStore> found = same_element_stores(loop);
  if (found.empty()) return std::nullopt;
  const std::string where = "'" + loop->thread_tag + "'";
  std::vector<SameElementStore> rest;
  std::optional<CrossThreadReduction> xr =
      the_reduction(found, is_block, where, private_ids, scope_vars, rest);
  place_other_stores(rest, where, private_ids, scope_vars, xr);
  if (xr) check_only_the_update_reads(loop, *xr, where);
  return xr;
}

} // namespace mt::gpu_codegen
