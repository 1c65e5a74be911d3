#include "core/schedule/region.h"

#include <algorithm>

namespace mt {

std::optional<DimRange> union_range(const DimRange& a, const DimRange& b, const RangeMap& ctx) {
  int64_t d;
  if (!is_const_int(simplify(b.min - a.min, ctx), &d)) return std::nullopt;
  // b starts d after a.
  int64_t lo = std::min<int64_t>(0, d);
  int64_t hi = std::max<int64_t>(a.extent, d + b.extent);
  return DimRange{d < 0 ? b.min : a.min, hi - lo};
}

RangeMap path_ranges(const StmtPath& path) {
  RangeMap r;
  for (auto& n : path.nodes)
    if (n->kind == StmtKind::For) {
      auto* f = as<ForNode>(n);
      r[f->loop_var.get()] = IntBound::range(0, f->extent);
    }
  return r;
}

DimRange relax_index(const Expr& index, const BlockRealizeNode* br, const StmtPath& path,
                     size_t scope_depth, int64_t shape_extent, bool relax_thread_loops) {
  VarMap vmap;
  for (size_t i = 0; i < br->iter_values.size(); ++i)
    vmap[br->block->iter_vars[i].var.get()] = br->iter_values[i];
  Expr e = substitute(index, vmap);
  RangeMap relaxed, context;
  for (size_t k = 0; k < path.nodes.size(); ++k) {
    if (path.nodes[k]->kind != StmtKind::For) continue;
    auto* f = as<ForNode>(path.nodes[k]);
    bool shared_by_threads =
        relax_thread_loops && f->for_kind == ForKind::ThreadBinding &&
        (f->thread_tag.rfind("threadIdx", 0) == 0 || f->thread_tag.rfind("vthread", 0) == 0);
    (k > scope_depth || shared_by_threads ? relaxed : context)[f->loop_var.get()] =
        IntBound::range(0, f->extent);
  }
  auto r = relax(e, relaxed, context);
  if (!r || r->extent >= shape_extent) return DimRange{int_imm(0), shape_extent};
  return DimRange{simplify(r->min, context), r->extent};
}

bool relaxed_range_is_dense(const Expr& index, const BlockRealizeNode* br, const StmtPath& path,
                            size_t scope_depth) {
  VarMap vmap;
  for (size_t i = 0; i < br->iter_values.size(); ++i)
    vmap[br->block->iter_vars[i].var.get()] = br->iter_values[i];
  Expr e = simplify(substitute(index, vmap));
  std::vector<std::pair<int64_t, int64_t>> terms; // |coefficient|, extent
  VarMap zero;
  for (size_t k = scope_depth + 1; k < path.nodes.size(); ++k) {
    if (path.nodes[k]->kind != StmtKind::For) continue;
    auto* f = as<ForNode>(path.nodes[k]);
    if (!uses_var(e, f->loop_var.get())) continue;
    auto c = linear_coefficient(e, f->loop_var.get());
    if (!c) return false;
    if (f->extent > 1 && *c != 0) terms.push_back({*c < 0 ? -*c : *c, f->extent});
    zero[f->loop_var.get()] = int_imm(0);
  }
  // The remainder must not depend on the relaxed loops through non-affine terms.
  Expr rest = e;
  for (auto& [var, z] : zero) {
    auto c = linear_coefficient(rest, var);
    if (!c) return false;
  }
  std::sort(terms.begin(), terms.end());
  int64_t covered = 1; // values of the terms so far form [0, covered)
  for (auto& [c, ext] : terms) {
    if (c > covered) return false;
    covered += c * (ext - 1);
  }
  return true;
}

} // namespace mt
