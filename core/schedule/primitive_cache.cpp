// cache_read, cache_write, set_scope and storage_align: staging buffers in another scope.
#include <algorithm>

#include "core/lower/storage_align.h"
#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

namespace {

bool is_param(const Function& f, const Buffer& b) {
  return std::find(f.params.begin(), f.params.end(), b) != f.params.end();
}

// The buffer a block writes at `index` (primitives that act on "the block's output").
Buffer written_buffer(const char* prim, const std::string& subject, const Block& b, int index) {
  auto writes = block_writes(b);
  if (index < 0 || index >= static_cast<int>(writes.size()))
    schedule_error(prim, subject, "write buffer index out of range");
  return writes[index];
}

// A block copying `src` to `dst` over the whole shape, in its own loop nest.
Stmt copy_nest(const std::string& name, const Buffer& src, const Buffer& dst) {
  Block b;
  b.name = name;
  std::vector<Expr> idx, loop_vars;
  for (size_t d = 0; d < src->shape.size(); ++d) {
    Expr v = make_var("v" + std::string("ax") + std::to_string(d));
    b.iter_vars.push_back(IterVar{v, src->shape[d], IterKind::Spatial});
    idx.push_back(v);
    loop_vars.push_back(make_var("ax" + std::to_string(d)));
  }
  b.body = make_store(dst, idx, make_load(src, idx));
  Stmt s = make_block_realize(loop_vars, Expr(), std::move(b));
  for (size_t d = src->shape.size(); d-- > 0;)
    s = make_for(loop_vars[d], src->shape[d], s);
  return s;
}

std::vector<Stmt> root_items(const Stmt& root) {
  if (root->kind == StmtKind::Seq) return as<SeqNode>(root)->stmts;
  return {root};
}

// Index of the top-level item containing block `name`.
size_t item_of(const std::vector<Stmt>& items, const std::string& name) {
  for (size_t i = 0; i < items.size(); ++i)
    if (find_block(items[i], name)) return i;
  return items.size();
}

// Rewrites loads (and, with `stores`, stores) of `from` to `to` inside one block.
Stmt retarget(const BlockRealizeNode* br, const Buffer& from, const Buffer& to, bool stores) {
  auto fix_e = [&](const Expr& e) {
    return transform(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer == from) return make_load(to, x->args);
      return x;
    });
  };
  auto fix_s = [&](const Stmt& s) {
    return transform_stmts(transform_exprs(s, fix_e), [&](const Stmt& x) -> Stmt {
      if (stores && x->kind == StmtKind::Store && as<StoreNode>(x)->buffer == from)
        return make_store(to, as<StoreNode>(x)->indices, as<StoreNode>(x)->value);
      return x;
    });
  };
  Block b = *br->block;
  if (b.init) b.init = fix_s(b.init);
  b.body = fix_s(b.body);
  return make_block_realize(br->iter_values, br->predicate, std::move(b));
}

void check_scope(const char* prim, const std::string& subject, const std::string& scope) {
  // "wmma.*": tensor-core fragments (per warp; "wgmma.accumulator" per warpgroup; lowered like
  // "local", see kTensorIntrinsicAnnotation).
  static const char* ok[] = {
      "global",           "shared",           "local", "cache", "wmma.matrix_a", "wmma.matrix_b",
      "wmma.accumulator", "wgmma.accumulator"};
  if (std::find(std::begin(ok), std::end(ok), scope) == std::end(ok))
    schedule_error(prim, subject, "unknown storage scope '" + scope + "'");
}

} // namespace

BlockRV Schedule::cache_read(BlockRV block, int read_buffer_index, const std::string& scope) {
  return transact(*impl_, [&] {
    const char* prim = "cache_read";
    StmtPath bp = impl_->block_path(prim, block);
    auto* br = impl_->realize(bp);
    std::string subject = "block '" + br->block->name + "'";
    check_scope(prim, subject, scope);
    auto reads = block_reads(*br->block);
    if (read_buffer_index < 0 || read_buffer_index >= static_cast<int>(reads.size()))
      schedule_error(prim, subject,
                     "read buffer index " + std::to_string(read_buffer_index) +
                         " out of range (the block reads " + std::to_string(reads.size()) +
                         " buffers)");
    Buffer x = reads[read_buffer_index];
    std::string name = impl_->fresh_name(x->name + "_" + scope);
    Buffer xs = make_buffer(name, x->dtype, x->shape, scope);
    std::vector<Stmt> items = root_items(func_.body);
    size_t pos = item_of(items, br->block->name);
    for (auto* other : collect_blocks(items[pos]))
      if (block_writes_buffer(*other->block, x.get()))
        schedule_error(prim, subject,
                       "'" + x->name + "' is produced in the same loop nest as the block");
    Stmt root = replace_at(bp, retarget(br, x, xs, false));
    items = root_items(root);
    items.insert(items.begin() + static_cast<long>(pos), copy_nest(name, x, xs));
    impl_->root() = make_seq(items);
    func_.buffers.push_back(xs);
    BlockRV out = impl_->new_block_rv(name);
    impl_->record({prim,
                   {Impl::ref(block)},
                   {int64_t(read_buffer_index), scope},
                   {Impl::ref(out)},
                   std::nullopt});
    return out;
  });
}

BlockRV Schedule::cache_write(BlockRV block, int write_buffer_index, const std::string& scope) {
  return transact(*impl_, [&] {
    const char* prim = "cache_write";
    StmtPath bp = impl_->block_path(prim, block);
    auto* br = impl_->realize(bp);
    std::string subject = "block '" + br->block->name + "'";
    check_scope(prim, subject, scope);
    auto writes = block_writes(*br->block);
    if (write_buffer_index < 0 || write_buffer_index >= static_cast<int>(writes.size()))
      schedule_error(prim, subject,
                     "write buffer index " + std::to_string(write_buffer_index) + " out of range");
    Buffer y = writes[write_buffer_index];
    for (auto* other : collect_blocks(func_.body))
      if (other->block->name != br->block->name && block_writes_buffer(*other->block, y.get()))
        schedule_error(prim, subject,
                       "'" + y->name + "' is also written by block '" + other->block->name + "'");
    std::vector<Stmt> items = root_items(func_.body);
    size_t pos = item_of(items, br->block->name);
    for (auto* other : collect_blocks(items[pos]))
      if (other->block->name != br->block->name && block_reads_buffer(*other->block, y.get()))
        schedule_error(prim, subject,
                       "'" + y->name + "' is read in the same loop nest as the block");
    std::string name = impl_->fresh_name(y->name + "_" + scope);
    Buffer ys = make_buffer(name, y->dtype, y->shape, scope);
    Stmt root = replace_at(bp, retarget(br, y, ys, true));
    items = root_items(root);
    items.insert(items.begin() + static_cast<long>(pos) + 1, copy_nest(name, ys, y));
    impl_->root() = make_seq(items);
    func_.buffers.push_back(ys);
    BlockRV out = impl_->new_block_rv(name);
    impl_->record({prim,
                   {Impl::ref(block)},
                   {int64_t(write_buffer_index), scope},
                   {Impl::ref(out)},
                   std::nullopt});
    return out;
  });
}

void Schedule::set_scope(BlockRV block, int write_buffer_index, const std::string& scope) {
  transact(*impl_, [&] {
    const char* prim = "set_scope";
    StmtPath bp = impl_->block_path(prim, block);
    auto* br = impl_->realize(bp);
    std::string subject = "block '" + br->block->name + "'";
    check_scope(prim, subject, scope);
    Buffer y = written_buffer(prim, subject, *br->block, write_buffer_index);
    if (is_param(func_, y))
      schedule_error(prim, subject,
                     "cannot change the scope of function argument '" + y->name + "'");
    if (y->scope != scope) impl_->replace_buffer(y, with_scope(y, scope));
    impl_->record(
        {prim, {Impl::ref(block)}, {int64_t(write_buffer_index), scope}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::storage_align(BlockRV block, int write_buffer_index, int axis, int factor,
                             int offset) {
  transact(*impl_, [&] {
    const char* prim = "storage_align";
    StmtPath bp = impl_->block_path(prim, block);
    auto* br = impl_->realize(bp);
    std::string subject = "block '" + br->block->name + "'";
    Buffer y = written_buffer(prim, subject, *br->block, write_buffer_index);
    if (axis < 0 || axis >= static_cast<int>(y->shape.size()))
      schedule_error(prim, subject, "axis " + std::to_string(axis) + " out of range");
    if (factor <= 0 || offset < 0 || offset >= factor)
      schedule_error(prim, subject, "need factor > 0 and 0 <= offset < factor");
    // Recorded as a block annotation; lowering pads the stride of the buffer's axis so that
    // stride % factor == offset (bank-conflict avoidance on GPUs, set conflicts on CPUs).
    Block b = *br->block;
    auto [key, value] = storage_align_annotation(y->name, axis, factor, offset);
    b.annotations[key] = value;
    impl_->root() =
        replace_at(bp, make_block_realize(br->iter_values, br->predicate, std::move(b)));
    impl_->record({prim,
                   {Impl::ref(block)},
                   {int64_t(write_buffer_index), int64_t(axis), int64_t(factor), int64_t(offset)},
                   {},
                   std::nullopt});
    return 0;
  });
}

} // namespace mt

namespace mt {

void Schedule::transform_layout(BlockRV block, int write_buffer_index,
                                const std::vector<int64_t>& permutation) {
  transact(*impl_, [&] {
    const char* prim = "transform_layout";
    StmtPath bp = impl_->block_path(prim, block);
    auto* br = impl_->realize(bp);
    std::string subject = "block '" + br->block->name + "'";
    Buffer y = written_buffer(prim, subject, *br->block, write_buffer_index);
    if (is_param(func_, y))
      schedule_error(prim, subject,
                     "cannot change the layout of function argument '" + y->name +
                         "': the caller owns it");
    const size_t n = y->shape.size();
    std::vector<bool> seen(n, false);
    bool ok = permutation.size() == n;
    for (int64_t p : permutation) {
      if (!ok || p < 0 || p >= static_cast<int64_t>(n) || seen[p]) {
        ok = false;
        break;
      }
      seen[p] = true;
    }
    if (!ok)
      schedule_error(prim, subject,
                     "the permutation must list each of the " + std::to_string(n) +
                         " dimensions of '" + y->name + "' once");
    std::vector<int64_t> shape(n);
    for (size_t d = 0; d < n; ++d)
      shape[d] = y->shape[permutation[d]];
    Buffer ny = make_buffer(y->name, y->dtype, shape, y->scope);
    impl_->replace_buffer(y, ny, [&](const std::vector<Expr>& idx) {
      std::vector<Expr> out(n);
      for (size_t d = 0; d < n; ++d)
        out[d] = idx[permutation[d]];
      return out;
    });
    impl_->record(
        {prim, {Impl::ref(block)}, {int64_t(write_buffer_index), permutation}, {}, std::nullopt});
    return 0;
  });
}

} // namespace mt
