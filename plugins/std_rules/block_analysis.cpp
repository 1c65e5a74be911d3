#include "block_analysis.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace mt::std_rules {

using sdk::BlockRV;
using sdk::ExprRef;
using sdk::IterKind;
using sdk::LoopRV;
using sdk::Schedule;
using sdk::StmtKind;
using sdk::StmtRef;

std::vector<LoopRole> loop_roles(const Schedule& sch, BlockRV block,
                                 const std::vector<LoopRV>& loops) {
  std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
  std::vector<LoopRole> roles(loops.size());
  for (size_t i = 0; i < loops.size(); ++i) {
    ExprRef var = sch.loop_var(loops[i]);
    for (const sdk::IterVarInfo& iv : ivs) {
      if (!iv.value || !iv.value.uses(var)) continue;
      (iv.kind == IterKind::Reduce ? roles[i].reduce : roles[i].spatial) = true;
    }
  }
  return roles;
}

bool has_reduce_iter(const Schedule& sch, BlockRV block) {
  for (const sdk::IterVarInfo& iv : sch.iter_vars(block))
    if (iv.kind == IterKind::Reduce) return true;
  return false;
}

namespace {
int64_t extent_of(const Schedule& sch, BlockRV block, IterKind kind) {
  int64_t n = 1;
  for (const sdk::IterVarInfo& iv : sch.iter_vars(block))
    if (iv.kind == kind) n *= iv.extent;
  return n;
}
} // namespace

int64_t spatial_extent(const Schedule& sch, BlockRV block) {
  return extent_of(sch, block, IterKind::Spatial);
}
int64_t reduce_extent(const Schedule& sch, BlockRV block) {
  return extent_of(sch, block, IterKind::Reduce);
}

bool writes_param(const Schedule& sch, BlockRV block) {
  sdk::Program p = sch.program();
  std::vector<sdk::BufferRef> params = p.params();
  for (const sdk::BufferAccess& w : sch.writes(block))
    if (std::find(params.begin(), params.end(), w.buffer) != params.end()) return true;
  return false;
}

bool has_trivial_binding(const Schedule& sch, BlockRV block, const std::vector<LoopRV>& loops) {
  std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
  if (ivs.size() != loops.size()) return false;
  std::set<const mt_expr*> loop_vars;
  for (LoopRV l : loops)
    loop_vars.insert(sch.loop_var(l).get());
  std::set<const mt_expr*> used;
  for (const sdk::IterVarInfo& iv : ivs) {
    if (!iv.value || iv.value.kind() != sdk::ExprKind::Var) return false;
    if (!loop_vars.count(iv.value.get()) || !used.insert(iv.value.get()).second) return false;
  }
  return true;
}

bool any_thread_bound(const Schedule& sch, const std::vector<LoopRV>& loops) {
  for (LoopRV l : loops)
    if (sch.kind(l) == sdk::ForKind::ThreadBinding) return true;
  return false;
}

std::optional<sdk::AnnValue> block_annotation(const Schedule& sch, BlockRV block,
                                              const std::string& key) {
  sdk::Annotations anns = sch.annotations(block);
  auto it = anns.find(key);
  if (it == anns.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> int_block_annotation(const Schedule& sch, BlockRV block,
                                            const std::string& key) {
  std::optional<sdk::AnnValue> v = block_annotation(sch, block, key);
  if (!v) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(&*v)) return *i;
  return std::nullopt;
}

// ---- LoopTree ----

LoopTree::LoopTree(const Schedule& sch) : program_(sch.program()) {
  StmtRef body = program_.body();
  if (!body) return;
  if (body.kind() == StmtKind::Seq)
    roots_ = body.children();
  else
    roots_.push_back(body);
  std::vector<StmtRef> path;
  std::function<void(StmtRef, int)> walk = [&](StmtRef s, int root) {
    if (!s) return;
    if (s.kind() == StmtKind::BlockRealize) {
      block_root_[s.block_name()] = root;
      block_loops_[s.block_name()] = path;
      return;
    }
    bool is_for = s.kind() == StmtKind::For;
    if (is_for) {
      loops_[s.loop_var().get()] = s;
      path.push_back(s);
    }
    for (StmtRef c : s.children())
      walk(c, root);
    if (is_for) path.pop_back();
  };
  for (size_t i = 0; i < roots_.size(); ++i)
    walk(roots_[i], static_cast<int>(i));
}

namespace {

bool reads_buffer(const sdk::ExprRef& e, const sdk::BufferRef& b) {
  if (!e) return false;
  if (e.kind() == sdk::ExprKind::Load && e.load_buffer() == b) return true;
  for (size_t i = 0, n = e.num_args(); i < n; ++i)
    if (reads_buffer(e.arg(i), b)) return true;
  return false;
}

bool stmt_reads(StmtRef body, const std::vector<sdk::BufferAccess>& buffers) {
  bool hit = false;
  body.visit([&](StmtRef x) {
    if (hit) return false;
    std::vector<sdk::ExprRef> exprs;
    if (x.kind() == StmtKind::Store) {
      exprs = x.indices();
      exprs.push_back(x.value());
    } else if (x.kind() == StmtKind::IfThenElse) {
      exprs.push_back(x.condition());
    }
    for (const sdk::ExprRef& e : exprs)
      for (const sdk::BufferAccess& a : buffers)
        hit = hit || reads_buffer(e, a.buffer);
    return true;
  });
  return hit;
}

} // namespace

std::vector<std::string> LoopTree::readers_of(const std::vector<sdk::BufferAccess>& buffers,
                                              const std::string& self) const {
  std::vector<std::string> out;
  for (const StmtRef& root : roots_) {
    root.visit([&](StmtRef s) {
      if (s.kind() != StmtKind::BlockRealize) return true;
      if (s.block_name() != self && (stmt_reads(s.block_body(), buffers) ||
                                     (s.block_init() && stmt_reads(s.block_init(), buffers))))
        out.push_back(s.block_name());
      return false;
    });
  }
  return out;
}

bool calls_costly_math(const sdk::ExprRef& e) {
  if (!e) return false;
  if (e.kind() == sdk::ExprKind::Call && e.call_fn() != sdk::MathFn::Abs) return true;
  for (size_t i = 0, n = e.num_args(); i < n; ++i)
    if (calls_costly_math(e.arg(i))) return true;
  return false;
}

bool inlining_recomputes_math(const Schedule& sch, BlockRV block) {
  auto [body, init] = sch.block_body(block);
  if (!body || body.kind() != StmtKind::Store || !calls_costly_math(body.value())) return false;
  return LoopTree(sch).readers_of(sch.writes(block), sch.name_of(block)).size() > 1;
}

std::vector<StmtRef> LoopTree::loops_of(const std::string& block) const {
  auto it = block_loops_.find(block);
  return it == block_loops_.end() ? std::vector<StmtRef>() : it->second;
}

std::vector<std::string> block_names_in_order(const sdk::Schedule& sch) {
  LoopTree tree(sch);
  std::vector<std::string> names;
  for (const StmtRef& item : tree.root_items())
    for (const std::string& n : tree.blocks_in(item))
      names.push_back(n);
  return names;
}

std::vector<std::string> LoopTree::blocks_in(StmtRef s) const {
  std::vector<std::string> out;
  s.visit([&](StmtRef x) {
    if (x.kind() == StmtKind::BlockRealize) out.push_back(x.block_name());
    return true;
  });
  return out;
}

StmtRef LoopTree::loop(ExprRef var) const {
  auto it = loops_.find(var.get());
  return it == loops_.end() ? StmtRef() : it->second;
}

std::vector<std::string> LoopTree::blocks_under(ExprRef loop_var) const {
  StmtRef s = loop(loop_var);
  if (!s) return {};
  return blocks_in(s);
}

bool LoopTree::is_only_child(ExprRef outer, ExprRef inner) const {
  StmtRef o = loop(outer);
  if (!o) return false;
  StmtRef b = o.body();
  return b && b.kind() == StmtKind::For && b.loop_var() == inner;
}

int LoopTree::root_item_of(const std::string& block) const {
  auto it = block_root_.find(block);
  return it == block_root_.end() ? -1 : it->second;
}

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}

bool in_plain_serial_nest(const sdk::Schedule& sch, sdk::BlockRV block) {
  const std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
  LoopTree tree(sch);
  std::vector<sdk::StmtRef> loops = tree.loops_of(sch.name_of(block));
  if (loops.size() != ivs.size()) return false;
  std::set<const mt_expr*> loop_vars, bound;
  for (const sdk::StmtRef& l : loops) {
    if (l.for_kind() != sdk::ForKind::Serial) return false;
    loop_vars.insert(l.loop_var().get());
  }
  for (const auto& iv : ivs)
    if (!iv.value || !loop_vars.count(iv.value.get()) || !bound.insert(iv.value.get()).second)
      return false;
  return true;
}

bool access_uses(const sdk::BufferAccess& a, const sdk::ExprRef& var) {
  for (const auto& tuple : a.indices)
    for (const sdk::ExprRef& e : tuple)
      if (e.uses(var)) return true;
  return false;
}

std::optional<MatmulAxes> matmul_axes(const std::vector<sdk::IterVarInfo>& ivs,
                                      const sdk::BufferAccess& a, const sdk::BufferAccess& b,
                                      bool ones_are_batch) {
  MatmulAxes m;
  int found_i = -1, found_j = -1, found_k = -1;
  for (size_t x = 0; x < ivs.size(); ++x) {
    const sdk::IterVarInfo& iv = ivs[x];
    const bool in_a = access_uses(a, iv.var), in_b = access_uses(b, iv.var);
    if (ones_are_batch && iv.kind == sdk::IterKind::Spatial && iv.extent == 1) {
      m.batch.push_back(x);
      continue;
    }
    int* role = nullptr;
    if (iv.kind == sdk::IterKind::Reduce) {
      if (!in_a || !in_b) return std::nullopt;
      role = &found_k;
    } else if (in_a != in_b) {
      role = in_a ? &found_i : &found_j;
    } else {
      m.batch.push_back(x);
      continue;
    }
    if (*role >= 0) return std::nullopt;
    *role = static_cast<int>(x);
  }
  if (found_i < 0 || found_j < 0 || found_k < 0) return std::nullopt;
  m.i = static_cast<size_t>(found_i);
  m.j = static_cast<size_t>(found_j);
  m.k = static_cast<size_t>(found_k);
  return m;
}

int read_index(const sdk::Schedule& sch, sdk::BlockRV block, const std::string& name,
               const std::string& rule) {
  std::vector<sdk::BufferAccess> reads = sch.reads(block);
  for (size_t i = 0; i < reads.size(); ++i)
    if (reads[i].buffer.name() == name) return static_cast<int>(i);
  throw sdk::ScheduleError(MT_ERROR_SCHEDULE, rule + ": " + name + ": no longer read by the block");
}

} // namespace mt::std_rules
