// compute_inline and reverse_compute_inline: fold an elementwise block into its consumers or
// its producer, removing its buffer.
#include <algorithm>

#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

namespace {

bool is_param(const Function& f, const Buffer& b) {
  return std::find(f.params.begin(), f.params.end(), b) != f.params.end();
}

// The single Store of a non-reduction block, or an error.
const StoreNode* single_store(const char* prim, const std::string& subject, const Block& b) {
  if (b.init || is_reduction_block(b))
    schedule_error(prim, subject, "the block is a reduction");
  if (b.body->kind != StmtKind::Store)
    schedule_error(prim, subject, "the block body must be a single store");
  return as<StoreNode>(b.body);
}

// Iter var index of each store index, requiring distinct iter vars covering all of them.
std::optional<std::vector<int>> index_iters(const std::vector<Expr>& idx, const Block& b) {
  std::vector<int> out;
  for (auto& e : idx) {
    int which = -1;
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      if (e.same_as(b.iter_vars[i].var)) which = static_cast<int>(i);
    if (which < 0 || std::find(out.begin(), out.end(), which) != out.end()) return std::nullopt;
    out.push_back(which);
  }
  if (out.size() != b.iter_vars.size()) return std::nullopt;
  return out;
}

// Blocks strictly between positions a and b of the program order.
std::vector<const Block*> blocks_between(const Stmt& root, const std::string& a,
                                         const std::string& b) {
  std::vector<const Block*> out;
  bool inside = false;
  for (auto* br : collect_blocks(root)) {
    if (br->block->name == a || br->block->name == b) {
      if (inside) break;
      inside = true;
      continue;
    }
    if (inside) out.push_back(br->block.get());
  }
  return out;
}

// Inlining copies a value into every read of it, and an expression is a tree once printed,
// hashed, searched or compiled: a value of a few hundred nodes read a few hundred times (RoPE's
// sine polynomial of its angle) made a 7.5 MB program that took 9 s to build. Past this many
// added nodes the primitives refuse; the rules that try them then keep the block.
constexpr size_t kMaxInlinedNodes = 4096;

// Nodes of `e` as a tree, counted up to `limit` (then `limit`): bounded however large it is.
size_t tree_size(const Expr& e, size_t limit) {
  size_t n = 0;
  std::vector<const ExprNode*> stack{e.get()};
  while (!stack.empty() && n < limit) {
    const ExprNode* x = stack.back();
    stack.pop_back();
    if (!x) continue;
    ++n;
    for (const Expr& a : x->args)
      stack.push_back(a.get());
  }
  return n;
}

// Refuses an inlining that would add more than kMaxInlinedNodes nodes: `reads` copies of
// `value`.
void check_inlined_size(const char* prim, const std::string& subject, const Expr& value,
                        size_t reads) {
  if (reads == 0) return;
  const size_t size = tree_size(value, kMaxInlinedNodes / reads + 1);
  if (size * reads > kMaxInlinedNodes)
    schedule_error(prim, subject,
                   "inlining would copy a value of " +
                       std::string(size > kMaxInlinedNodes / reads ? "at least " : "") +
                       std::to_string(size) + " expression nodes into " + std::to_string(reads) +
                       " reads, more than " + std::to_string(kMaxInlinedNodes) + " nodes in all");
}

Stmt rewrite_block(const BlockRealizeNode* br, Block nb) {
  return make_block_realize(br->iter_values, br->predicate, std::move(nb));
}

} // namespace

void Schedule::compute_inline(BlockRV block) {
  transact(*impl_, [&] {
    const char* prim = "compute_inline";
    StmtPath bp = impl_->block_path(prim, block);
    const Block& p = *impl_->realize(bp)->block;
    std::string subject = "block '" + p.name + "'";
    const StoreNode* st = single_store(prim, subject, p);
    Buffer w = st->buffer;
    if (is_param(func_, w))
      schedule_error(prim, subject, "the block writes the function output '" + w->name + "'");
    auto dims = index_iters(st->indices, p);
    if (!dims)
      schedule_error(prim, subject, "the store indices must be exactly the block's iter vars");
    if (uses_buffer(st->value, w.get())) schedule_error(prim, subject, "the block reads its own output");
    for (auto* br : collect_blocks(func_.body))
      if (br->block->name != p.name && block_writes_buffer(*br->block, w.get()))
        schedule_error(prim, subject,
                       "'" + w->name + "' is also written by block '" + br->block->name + "'");
    auto reads = block_reads(p);
    // Replace loads of w in every consumer by the value with iter vars bound to the indices.
    auto inline_expr = [&](const Expr& e) {
      return transform(e, [&](const Expr& x) {
        if (x->kind != ExprKind::Load || x->buffer != w) return x;
        VarMap vmap;
        for (size_t d = 0; d < dims->size(); ++d) vmap[p.iter_vars[(*dims)[d]].var.get()] = x->args[d];
        return substitute(st->value, vmap);
      });
    };
    std::vector<std::string> consumers;
    size_t loads = 0;
    for (auto* br : collect_blocks(func_.body))
      if (br->block->name != p.name && block_reads_buffer(*br->block, w.get())) {
        consumers.push_back(br->block->name);
        loads += block_loads_of(*br->block, w.get()).size();
      }
    check_inlined_size(prim, subject, st->value, loads);
    for (auto& cn : consumers)
      for (auto* mid : blocks_between(func_.body, p.name, cn))
        for (auto& r : reads)
          if (block_writes_buffer(*mid, r.get()))
            schedule_error(prim, subject,
                           "block '" + mid->name + "' overwrites '" + r->name +
                               "' between the block and its consumer '" + cn + "'");
    Stmt root = replace_at(bp, nullptr);
    for (auto& cn : consumers) {
      StmtPath cp = *find_block(root, cn);
      auto* br = as<BlockRealizeNode>(cp.leaf());
      Block nb = *br->block;
      auto fix = [&](const Expr& e) { return inline_expr(e); };
      if (nb.init) nb.init = transform_exprs(nb.init, fix);
      nb.body = transform_exprs(nb.body, fix);
      root = replace_at(cp, rewrite_block(br, std::move(nb)));
    }
    impl_->root() = root;
    std::erase(func_.buffers, w);
    impl_->normalize();
    impl_->record({prim, {Impl::ref(block)}, {}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::reverse_compute_inline(BlockRV block) {
  transact(*impl_, [&] {
    const char* prim = "reverse_compute_inline";
    StmtPath cp = impl_->block_path(prim, block);
    const Block& c = *impl_->realize(cp)->block;
    std::string subject = "block '" + c.name + "'";
    const StoreNode* cst = single_store(prim, subject, c);
    // The one intermediate buffer read by c that a single non-reduction block produces.
    Buffer x;
    std::string producer;
    for (auto& r : block_reads(c)) {
      if (is_param(func_, r)) continue;
      std::vector<std::string> writers;
      for (auto* br : collect_blocks(func_.body))
        if (block_writes_buffer(*br->block, r.get())) writers.push_back(br->block->name);
      if (writers.size() != 1) continue;
      if (x) schedule_error(prim, subject, "the block reads more than one intermediate buffer");
      x = r;
      producer = writers[0];
    }
    if (!x) schedule_error(prim, subject, "the block has no producer to inline into");
    auto loads = block_loads_of(c, x.get());
    std::optional<std::vector<int>> dims = index_iters(loads[0]->args, c);
    for (auto& ld : loads) {
      auto d2 = index_iters(ld->args, c);
      if (!dims || !d2 || *d2 != *dims)
        schedule_error(prim, subject,
                       "the block must read '" + x->name + "' once, at exactly its iter vars");
    }
    for (size_t d = 0; d < dims->size(); ++d)
      if (c.iter_vars[(*dims)[d]].extent != x->shape[d])
        schedule_error(prim, subject, "the block's domain differs from the shape of '" + x->name + "'");
    for (auto* br : collect_blocks(func_.body))
      if (br->block->name != c.name && block_reads_buffer(*br->block, x.get()))
        schedule_error(prim, subject,
                       "'" + x->name + "' is also read by block '" + br->block->name + "'");
    StmtPath pp = *find_block(func_.body, producer);
    auto* pbr = as<BlockRealizeNode>(pp.leaf());
    const Block& p = *pbr->block;
    const StoreNode* pst = single_store(prim, "producer block '" + p.name + "'", p);
    check_inlined_size(prim, subject, pst->value, loads.size());
    for (auto* mid : blocks_between(func_.body, p.name, c.name)) {
      bool clash = block_reads_buffer(*mid, cst->buffer.get()) ||
                   block_writes_buffer(*mid, cst->buffer.get());
      for (auto& r : block_reads(c)) clash = clash || block_writes_buffer(*mid, r.get());
      if (clash)
        schedule_error(prim, subject, "block '" + mid->name + "' between producer and consumer conflicts");
    }
    // c's iter var at X dim d becomes the producer's store index d.
    VarMap vmap;
    for (size_t d = 0; d < dims->size(); ++d) vmap[c.iter_vars[(*dims)[d]].var.get()] = pst->indices[d];
    Expr value = transform(cst->value, [&](const Expr& e) {
      if (e->kind == ExprKind::Load && e->buffer == x) return pst->value;
      return e;
    });
    value = substitute(value, vmap);
    std::vector<Expr> idx;
    for (auto& i : cst->indices) idx.push_back(substitute(i, vmap));
    Block nb = p;
    nb.body = make_store(cst->buffer, idx, value);
    Stmt root = replace_at(pp, rewrite_block(pbr, std::move(nb)));
    root = replace_at(*find_block(root, c.name), nullptr);
    impl_->root() = root;
    std::erase(func_.buffers, x);
    impl_->normalize();
    impl_->record({prim, {Impl::ref(block)}, {}, {}, std::nullopt});
    return 0;
  });
}

} // namespace mt
