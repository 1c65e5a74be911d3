// Schedule state, lookups, sampling instructions and instruction recording. The primitives
// that transform the tree live in primitive_*.cpp.
#include "core/schedule/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

ScheduleError::ScheduleError(std::string primitive, std::string subject, std::string reason)
    : std::runtime_error("schedule error in " + primitive + (subject.empty() ? "" : " on " + subject) +
                         ": " + reason),
      primitive_(std::move(primitive)), subject_(std::move(subject)), reason_(std::move(reason)) {}

void schedule_error(const std::string& prim, const std::string& subject,
                    const std::string& reason) {
  throw ScheduleError(prim, subject, reason);
}

Schedule::Schedule(Function func, uint64_t seed)
    : func_(std::move(func)), rng_(seed), trace_(std::make_unique<Trace>()),
      impl_(std::make_unique<Impl>(this)) {
  if (func_.lowered)
    throw std::invalid_argument("Schedule: function '" + func_.name +
                                "' is already lowered (schedule the function before lower())");
}

Schedule::~Schedule() = default;
Schedule::Schedule(Schedule&& o) noexcept
    : func_(std::move(o.func_)), rng_(o.rng_), trace_(std::move(o.trace_)),
      impl_(std::move(o.impl_)) {
  impl_->self = this;
}
Schedule& Schedule::operator=(Schedule&& o) noexcept {
  func_ = std::move(o.func_);
  rng_ = o.rng_;
  trace_ = std::move(o.trace_);
  impl_ = std::move(o.impl_);
  impl_->self = this;
  return *this;
}

std::unique_ptr<Schedule> Schedule::copy() const {
  auto s = std::make_unique<Schedule>(func_, 1);
  RandomEngine r = rng_;
  s->rng_ = r.fork();
  *s->trace_ = *trace_;
  s->impl_->blocks = impl_->blocks;
  s->impl_->loops = impl_->loops;
  s->impl_->values = impl_->values;
  s->impl_->fresh_counter = impl_->fresh_counter;
  return s;
}

// ---- Impl: symbol tables and lookups -------------------------------------------------------

BlockRV Schedule::Impl::new_block_rv(const std::string& name) {
  blocks.push_back(name);
  return {static_cast<int>(blocks.size()) - 1};
}
LoopRV Schedule::Impl::new_loop_rv(const Expr& var) {
  loops.push_back(var);
  return {static_cast<int>(loops.size()) - 1};
}
ExprRV Schedule::Impl::new_expr_rv(int64_t v) {
  values.push_back(v);
  return {static_cast<int>(values.size()) - 1};
}

const std::string& Schedule::Impl::block_name(const char* prim, BlockRV b) const {
  if (b.id < 0 || b.id >= static_cast<int>(blocks.size()))
    schedule_error(prim, "b" + std::to_string(b.id), "not a block of this schedule");
  return blocks[b.id];
}

const Expr& Schedule::Impl::loop_var(const char* prim, LoopRV l) const {
  if (l.id < 0 || l.id >= static_cast<int>(loops.size()))
    schedule_error(prim, "l" + std::to_string(l.id),
                   l.is_root() ? "the root is not a loop" : "not a loop of this schedule");
  return loops[l.id];
}

int64_t Schedule::Impl::value(const char* prim, ExprRV v) const {
  if (v.id < 0 || v.id >= static_cast<int>(values.size()))
    schedule_error(prim, "v" + std::to_string(v.id), "not an integer of this schedule");
  return values[v.id];
}

StmtPath Schedule::Impl::block_path(const char* prim, BlockRV b) {
  const std::string& name = block_name(prim, b);
  auto p = find_block(root(), name);
  if (!p) schedule_error(prim, "block '" + name + "'", "the block no longer exists");
  return *p;
}

StmtPath Schedule::Impl::loop_path(const char* prim, LoopRV l) {
  const Expr& v = loop_var(prim, l);
  auto p = find_loop(root(), v.get());
  if (!p) schedule_error(prim, loop_desc(l), "the loop no longer exists");
  return *p;
}

RangeMap Schedule::Impl::loop_ranges(const StmtPath& p) {
  RangeMap r;
  for (auto* f : p.loops()) r[f->loop_var.get()] = IntBound::range(0, f->extent);
  if (p.leaf()->kind == StmtKind::For) {
    auto* f = as<ForNode>(p.leaf());
    r[f->loop_var.get()] = IntBound::range(0, f->extent);
  }
  return r;
}

std::string Schedule::Impl::loop_desc(LoopRV l) const {
  if (l.is_root()) return "root";
  if (l.is_inlined()) return "inline";
  if (l.id < 0 || l.id >= static_cast<int>(loops.size())) return "l" + std::to_string(l.id);
  return "loop '" + loops[l.id]->name + "' (l" + std::to_string(l.id) + ")";
}

bool Schedule::Impl::name_taken(const std::string& name) const {
  for (auto& b : self->func_.params)
    if (b->name == name) return true;
  for (auto& b : self->func_.buffers)
    if (b->name == name) return true;
  return find_block(self->func_.body, name).has_value();
}

std::string Schedule::Impl::fresh_name(const std::string& base) {
  if (!name_taken(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!name_taken(n)) return n;
  }
}

void Schedule::Impl::normalize() {
  // Simplify iter bindings and predicates with the ranges of the enclosing loops; drop
  // predicates that are proven true.
  std::unordered_map<const ExprNode*, SimplifiedBinding> met;
  std::vector<std::pair<const ExprNode*, IntBound>> bounds;
  auto bounds_of = [&](const Expr& e, const RangeMap& ranges) {
    bounds.clear();
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind != ExprKind::Var) return;
      for (const auto& [v, b] : bounds)
        if (v == x.get()) return;
      auto it = ranges.find(x.get());
      bounds.emplace_back(x.get(), it == ranges.end() ? IntBound{} : it->second);
    });
  };
  auto same = [](const std::vector<std::pair<const ExprNode*, IntBound>>& a,
                 const std::vector<std::pair<const ExprNode*, IntBound>>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].first != b[i].first || a[i].second.min != b[i].second.min ||
          a[i].second.max != b[i].second.max)
        return false;
    return true;
  };
  std::function<Stmt(const Stmt&, RangeMap&)> rec = [&](const Stmt& s, RangeMap& ranges) -> Stmt {
    switch (s->kind) {
    case StmtKind::For: {
      auto* f = as<ForNode>(s);
      ranges[f->loop_var.get()] = IntBound::range(0, f->extent);
      Stmt b = rec(f->body, ranges);
      ranges.erase(f->loop_var.get());
      return b == f->body ? s : with_body(s, b);
    }
    case StmtKind::Seq: {
      std::vector<Stmt> items;
      bool changed = false;
      for (auto& c : as<SeqNode>(s)->stmts) {
        items.push_back(rec(c, ranges));
        changed = changed || items.back() != c;
      }
      return changed ? make_seq(items) : s;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      Stmt t = rec(n->then_case, ranges);
      Stmt e = n->else_case ? rec(n->else_case, ranges) : nullptr;
      return make_if(simplify(n->condition, ranges), t, e);
    }
    case StmtKind::BlockRealize: {
      auto* br = as<BlockRealizeNode>(s);
      std::optional<RangeSimplifier> simp;
      std::vector<Expr> vals;
      bool changed = false;
      for (auto& v : br->iter_values) {
        bounds_of(v, ranges);
        auto known = simplified_bindings.find(v.get());
        Expr out;
        if (known != simplified_bindings.end() && same(known->second.bounds, bounds)) {
          out = known->second.out;
        } else {
          if (!simp) simp.emplace(ranges);
          out = simp->simplify(v);
        }
        met.emplace(v.get(), SimplifiedBinding{v, out, bounds});
        changed = changed || !out.same_as(v);
        vals.push_back(std::move(out));
      }
      Expr pred = br->predicate;
      if (pred) {
        if (!simp) simp.emplace(ranges);
        pred = simp->simplify(pred);
        if (is_const_int(pred, 1) || simp->prove(pred)) pred = Expr();
        changed = changed || !pred.same_as(br->predicate);
      }
      if (!changed) return s;
      auto n = std::make_shared<BlockRealizeNode>(*br);
      n->iter_values = std::move(vals);
      n->predicate = pred;
      return n;
    }
    default: return s;
    }
  };
  RangeMap ranges;
  if (root()) root() = rec(root(), ranges);
  simplified_bindings = std::move(met);
}

void Schedule::Impl::replace_buffer(const Buffer& from, const Buffer& to, const IndexRemap& remap) {
  auto fix_expr = [&](const Expr& e) {
    return transform(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer == from)
        return make_load(to, remap ? remap(x->args) : x->args);
      return x;
    });
  };
  std::function<Stmt(const Stmt&)> fix_stmt = [&](const Stmt& s) -> Stmt {
    return transform_stmts(s, [&](const Stmt& x) -> Stmt {
      if (x->kind == StmtKind::Store) {
        auto* st = as<StoreNode>(x);
        std::vector<Expr> idx;
        for (auto& i : st->indices) idx.push_back(fix_expr(i));
        if (st->buffer == from) return make_store(to, remap ? remap(idx) : idx, fix_expr(st->value));
        return make_store(st->buffer, idx, fix_expr(st->value));
      }
      if (x->kind == StmtKind::IfThenElse) {
        auto* n = as<IfThenElseNode>(x);
        return make_if(fix_expr(n->condition), n->then_case, n->else_case);
      }
      if (x->kind == StmtKind::BlockRealize) {
        auto* br = as<BlockRealizeNode>(x);
        Block b = *br->block;
        if (b.init) b.init = fix_stmt(b.init);
        b.body = fix_stmt(b.body);
        return make_block_realize(br->iter_values, br->predicate, std::move(b));
      }
      return x;
    });
  };
  root() = fix_stmt(root());
  for (auto& b : func().buffers)
    if (b == from) b = to;
  for (auto& b : func().params)
    if (b == from) b = to;
}

void Schedule::Impl::check_order_preserved(const char* prim, const std::string& subject,
                                           const std::vector<std::string>& before) {
  std::vector<std::string> after = block_names_in_order(root());
  std::map<std::string, const Block*> blocks_now;
  for (auto* br : collect_blocks(root())) blocks_now[br->block->name] = br->block.get();
  std::map<std::string, size_t> pos_after;
  for (size_t i = 0; i < after.size(); ++i) pos_after[after[i]] = i;
  std::vector<std::string> kept;
  for (auto& n : before)
    if (pos_after.count(n)) kept.push_back(n);
  auto conflict = [](const Block& a, const Block& b) {
    for (auto& w : block_writes(a))
      if (block_writes_buffer(b, w.get()) || block_reads_buffer(b, w.get())) return true;
    for (auto& w : block_writes(b))
      if (block_reads_buffer(a, w.get())) return true;
    return false;
  };
  for (size_t i = 0; i < kept.size(); ++i)
    for (size_t j = i + 1; j < kept.size(); ++j) {
      const Block* a = blocks_now[kept[i]];
      const Block* b = blocks_now[kept[j]];
      if (pos_after[kept[i]] > pos_after[kept[j]] && conflict(*a, *b))
        schedule_error(prim, subject,
                       "the move would put block '" + kept[j] + "' before block '" + kept[i] +
                           "', which it depends on");
    }
}

void Schedule::Impl::record(Instruction inst) {
  if (recording()) self->trace_->append(std::move(inst));
}

// ---- lookup / analysis ----------------------------------------------------------------------

BlockRV Schedule::get_block(const std::string& name) {
  return transact(*impl_, [&] {
    if (!find_block(func_.body, name))
      schedule_error("get_block", "'" + name + "'", "no block with this name");
    BlockRV b = impl_->new_block_rv(name);
    impl_->record({"get_block", {}, {name}, {Impl::ref(b)}, std::nullopt});
    return b;
  });
}

std::vector<LoopRV> Schedule::get_loops(BlockRV block) {
  return transact(*impl_, [&] {
    StmtPath p = impl_->block_path("get_loops", block);
    std::vector<LoopRV> out;
    Instruction inst{"get_loops", {Impl::ref(block)}, {}, {}, std::nullopt};
    for (auto* f : p.loops()) {
      out.push_back(impl_->new_loop_rv(f->loop_var));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

std::vector<BlockRV> Schedule::get_child_blocks(LoopRV loop) {
  return transact(*impl_, [&] {
    Stmt scope = func_.body;
    if (!loop.is_root()) scope = impl_->loop_path("get_child_blocks", loop).leaf();
    std::vector<BlockRV> out;
    Instruction inst{"get_child_blocks", {Impl::ref(loop)}, {}, {}, std::nullopt};
    for (auto* br : collect_blocks(scope)) {
      out.push_back(impl_->new_block_rv(br->block->name));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

namespace {
// Producers (`producers` = true) or consumers of a block, in program order.
std::vector<std::string> related_blocks(const Stmt& root, const std::string& name,
                                        bool producers) {
  std::vector<std::string> out;
  auto all = collect_blocks(root);
  const Block* self = nullptr;
  for (auto* br : all)
    if (br->block->name == name) self = br->block.get();
  if (!self) return out;
  for (auto* br : all) {
    const Block& other = *br->block;
    if (other.name == name) continue;
    bool related = false;
    if (producers) {
      for (auto& r : block_reads(*self)) related = related || block_writes_buffer(other, r.get());
    } else {
      for (auto& w : block_writes(*self)) related = related || block_reads_buffer(other, w.get());
    }
    if (related) out.push_back(other.name);
  }
  return out;
}
} // namespace

std::vector<BlockRV> Schedule::get_producers(BlockRV block) {
  return transact(*impl_, [&] {
    impl_->block_path("get_producers", block);
    std::vector<BlockRV> out;
    Instruction inst{"get_producers", {Impl::ref(block)}, {}, {}, std::nullopt};
    for (auto& n : related_blocks(func_.body, impl_->blocks[block.id], true)) {
      out.push_back(impl_->new_block_rv(n));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

std::vector<BlockRV> Schedule::get_consumers(BlockRV block) {
  return transact(*impl_, [&] {
    impl_->block_path("get_consumers", block);
    std::vector<BlockRV> out;
    Instruction inst{"get_consumers", {Impl::ref(block)}, {}, {}, std::nullopt};
    for (auto& n : related_blocks(func_.body, impl_->blocks[block.id], false)) {
      out.push_back(impl_->new_block_rv(n));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

std::vector<BlockRV> Schedule::all_blocks() { return get_child_blocks(LoopRV::root()); }

// ---- sampling ----------------------------------------------------------------------------------

namespace {

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

} // namespace

std::vector<ExprRV> Schedule::sample_perfect_tile(LoopRV loop, int n, int max_innermost_factor,
                                                  std::optional<std::vector<int64_t>> decision) {
  return transact(*impl_, [&] {
    const char* prim = "sample_perfect_tile";
    StmtPath p = impl_->loop_path(prim, loop);
    int64_t extent = as<ForNode>(p.leaf())->extent;
    if (n < 1) schedule_error(prim, impl_->loop_desc(loop), "n must be >= 1");
    std::vector<int64_t> tiles;
    if (decision) {
      tiles = *decision;
      int64_t prod = 1;
      for (int64_t t : tiles) prod *= t;
      if (static_cast<int>(tiles.size()) != n || prod != extent ||
          std::any_of(tiles.begin(), tiles.end(), [](int64_t t) { return t < 1; }))
        schedule_error(prim, impl_->loop_desc(loop),
                       "decision does not tile extent " + std::to_string(extent) + " into " +
                           std::to_string(n) + " factors");
    } else {
      // Assign each prime factor to a random level; the innermost level is kept within
      // max_innermost_factor by moving excess primes outward.
      std::vector<int64_t> primes = prime_factors(extent);
      for (int attempt = 0;; ++attempt) {
        tiles.assign(n, 1);
        for (int64_t pr : primes) tiles[rng_.uniform_int(0, n)] *= pr;
        if (max_innermost_factor <= 0 || tiles[n - 1] <= max_innermost_factor) break;
        if (attempt >= 16) {
          // Deterministic fallback: largest divisor of the innermost within the limit.
          int64_t inner = tiles[n - 1], best = 1;
          for (int64_t d = 1; d <= max_innermost_factor && d <= inner; ++d)
            if (inner % d == 0) best = d;
          tiles[n - 1] = best;
          tiles[n > 1 ? n - 2 : 0] *= inner / best;
          break;
        }
      }
    }
    std::vector<ExprRV> out;
    Instruction inst{prim, {Impl::ref(loop)}, {int64_t(n), int64_t(max_innermost_factor)}, {}, tiles};
    for (int64_t t : tiles) {
      out.push_back(impl_->new_expr_rv(t));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

ExprRV Schedule::sample_categorical(const std::vector<int64_t>& candidates,
                                    const std::vector<double>& probs,
                                    std::optional<int64_t> decision) {
  return transact(*impl_, [&] {
    const char* prim = "sample_categorical";
    if (candidates.empty() || candidates.size() != probs.size())
      schedule_error(prim, "", "candidates and probabilities must be non-empty and of equal size");
    int64_t idx = decision ? *decision : rng_.categorical(probs);
    if (idx < 0 || idx >= static_cast<int64_t>(candidates.size()))
      schedule_error(prim, "", "decision " + std::to_string(idx) + " out of range");
    ExprRV v = impl_->new_expr_rv(candidates[idx]);
    impl_->record({prim, {}, {candidates, probs}, {Impl::ref(v)}, std::vector<int64_t>{idx}});
    return v;
  });
}

LoopRV Schedule::sample_compute_location(BlockRV block, std::optional<int64_t> decision) {
  return transact(*impl_, [&] {
    const char* prim = "sample_compute_location";
    StmtPath bp = impl_->block_path(prim, block);
    const std::string name = impl_->blocks[block.id];
    // Candidates: inline (-2), root (-1), then every loop enclosing all consumers (outermost
    // first) that does not enclose the block itself.
    std::vector<Expr> cands;
    auto consumers = related_blocks(func_.body, name, false);
    if (!consumers.empty()) {
      std::vector<std::vector<const ForNode*>> chains;
      for (auto& c : consumers) chains.push_back(find_block(func_.body, c)->loops());
      std::set<const ExprNode*> own;
      for (auto* f : bp.loops()) own.insert(f->loop_var.get());
      for (size_t d = 0; d < chains[0].size(); ++d) {
        bool common = true;
        for (auto& ch : chains) common = common && d < ch.size() && ch[d] == chains[0][d];
        if (!common) break;
        if (!own.count(chains[0][d]->loop_var.get())) cands.push_back(chains[0][d]->loop_var);
      }
    }
    int64_t idx;
    if (decision) {
      idx = *decision;
      if (idx < -2 || idx >= static_cast<int64_t>(cands.size()))
        schedule_error(prim, "block '" + name + "'",
                       "decision " + std::to_string(idx) + " is not a valid location");
    } else {
      idx = rng_.uniform_int(-2, static_cast<int64_t>(cands.size()));
    }
    LoopRV out = idx == -2 ? LoopRV::inlined()
                 : idx == -1 ? LoopRV::root()
                             : impl_->new_loop_rv(cands[idx]);
    impl_->record({prim, {Impl::ref(block)}, {}, {Impl::ref(out)}, std::vector<int64_t>{idx}});
    return out;
  });
}

// ---- values ---------------------------------------------------------------------------------------

int64_t Schedule::get(ExprRV v) const { return impl_->value("get", v); }

const Block& Schedule::get(BlockRV b) const {
  auto p = impl_->block_path("get", b);
  return *as<BlockRealizeNode>(p.leaf())->block;
}

const ForNode& Schedule::get(LoopRV l) const {
  auto p = impl_->loop_path("get", l);
  return *as<ForNode>(p.leaf());
}

std::string Schedule::name_of(BlockRV b) const { return impl_->block_name("name_of", b); }

bool Schedule::valid(BlockRV b) const {
  return b.id >= 0 && b.id < static_cast<int>(impl_->blocks.size()) &&
         find_block(func_.body, impl_->blocks[b.id]).has_value();
}

bool Schedule::valid(LoopRV l) const {
  return l.id >= 0 && l.id < static_cast<int>(impl_->loops.size()) &&
         find_loop(func_.body, impl_->loops[l.id].get()).has_value();
}

} // namespace mt
