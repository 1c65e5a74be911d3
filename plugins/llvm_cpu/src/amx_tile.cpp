#include "amx_tile.h"

#include <array>
#include <map>
#include <unordered_map>
#include <variant>

#include "metatune/sdk/expr_equal.hpp"
#include "metatune/sdk/index_analysis.hpp"
#include "program_walk.h"

namespace mt::llvm_cpu {

namespace P = sdk::program;

namespace {

bool is_f32(const P::DType& t) {
  return t == P::DType::f32();
}
bool is_bf16(const P::DType& t) {
  return t.kind == P::DTypeKind::BFloat && t.bits == 16;
}

// The load an operand reads: the operand itself, or under a cast to f32.
P::Expr operand_load(const P::Expr& v) {
  if (!is_f32(v->dtype)) return {};
  P::Expr l = v;
  if (l->kind == P::ExprKind::Cast) l = l->args[0];
  if (l->kind != P::ExprKind::Load || !(is_f32(l->buffer->dtype) || is_bf16(l->buffer->dtype)))
    return {};
  return l;
}

bool uses(const P::Expr& e, int64_t var) {
  return P::uses_var(e, var);
}

// The row index r of a load of a buffer in pairs, [.., r // 2, c, r % 2]; null otherwise.
struct PairIndex {
  P::Expr row, col;
};
std::optional<PairIndex> pair_index(const P::Expr& load) {
  const P::BufferNode& b = *load->buffer;
  const size_t n = load->args.size();
  if (!is_bf16(b.dtype) || n < 3 || b.shape.back() != 2) return std::nullopt;
  const P::Expr& d = load->args[n - 3];
  const P::Expr& m = load->args[n - 1];
  int64_t two = 0;
  if (d->kind != P::ExprKind::FloorDiv || m->kind != P::ExprKind::FloorMod ||
      !P::is_const_int(d->args[1], &two) || two != 2 || !P::is_const_int(m->args[1], &two) ||
      two != 2 || !P::expr_equal(d->args[0], m->args[0]))
    return std::nullopt;
  return PairIndex{d->args[0], load->args[n - 2]};
}

// e moves with var by exactly 1 and with everything else by even steps from an even constant:
// at var = 0 it is even wherever it is evaluated.
bool even_but(const P::Expr& e, int64_t var) {
  std::optional<P::Affine> a = P::affine(e);
  if (!a || a->constant % 2 != 0) return false;
  for (const auto& [v, c] : a->coef)
    if (v == var ? c != 1 : c % 2 != 0) return false;
  return a->coef.count(var) == 1;
}

// Strides of `op`'s load along (row, col); false where it does not move with exactly those.
bool strides_of(AmxOperand& op, int64_t row, int64_t col, int64_t other) {
  const P::Expr& l = op.load;
  if (std::optional<PairIndex> p = pair_index(l)) {
    // Laid out in pairs (B only: row is k, col is j).
    bool ok = even_but(p->row, row) && !uses(p->row, col) && !uses(p->row, other) &&
              P::affine_coefficient(p->col, col) == 1 && !uses(p->col, row) && !uses(p->col, other);
    for (size_t d = 0; d + 3 < l->args.size(); ++d)
      ok = ok && !uses(l->args[d], row) && !uses(l->args[d], col) && !uses(l->args[d], other);
    if (!ok) return false;
    const std::vector<int64_t>& s = l->buffer->shape;
    op.pairs = true;
    op.pair_row_stride = s[s.size() - 2] * 2;
    return true;
  }
  const P::Expr flat = P::flat_index(*l->buffer, l->args);
  std::optional<int64_t> r = P::affine_coefficient(flat, row), c = P::affine_coefficient(flat, col);
  if (!r || !c || *r == 0 || *c == 0 || uses(flat, other)) return false;
  op.row_stride = *r;
  op.col_stride = *c;
  return true;
}

} // namespace

bool is_amx_marked(const P::StmtNode& loop) {
  if (loop.kind != P::StmtKind::For) return false;
  auto it = loop.annotations.find(P::kTensorIntrinsicAnnotation);
  if (it == loop.annotations.end()) return false;
  const std::string* v = std::get_if<std::string>(&it->second);
  return v && *v == kAmxBf16Intrinsic;
}

std::optional<AmxTile> match_amx_tile(const P::StmtNode& loop) {
  std::array<const P::StmtNode*, 3> loops{};
  const P::StmtNode* s = &loop;
  for (auto& l : loops) {
    if (!s || s->kind != P::StmtKind::For || s->extent <= 0 ||
        s->for_kind == P::ForKind::Parallel || s->for_kind == P::ForKind::ThreadBinding)
      return std::nullopt;
    l = s;
    s = only_stmt(s->body);
  }
  if (!s || s->kind != P::StmtKind::Store || !is_f32(s->buffer->dtype)) return std::nullopt;
  // C[x] = C[x] + a * b
  const P::Expr& v = s->value;
  if (v->kind != P::ExprKind::Add || !is_f32(v->dtype)) return std::nullopt;
  const P::Expr& acc = v->args[0];
  const P::Expr& prod = v->args[1];
  if (acc->kind != P::ExprKind::Load || acc->buffer->id != s->buffer->id ||
      !P::exprs_equal(acc->args, s->indices) || prod->kind != P::ExprKind::Mul)
    return std::nullopt;
  AmxTile t;
  t.store = s;
  const P::Expr c_flat = P::flat_index(*s->buffer, s->indices);
  // k: the loop C does not move with; j: the one along which C is contiguous; i: the other.
  std::map<int64_t, int64_t> extent;
  int found_k = 0, found_j = 0;
  for (const P::StmtNode* l : loops) {
    const int64_t id = l->loop_var->var_id;
    extent[id] = l->extent;
    std::optional<int64_t> c = P::affine_coefficient(c_flat, id);
    if (!c) return std::nullopt;
    if (*c == 0) {
      t.k_var = id;
      ++found_k;
    } else if (*c == 1 && !found_j) {
      t.j_var = id;
      ++found_j;
    } else {
      t.i_var = id;
      t.c_row_stride = *c;
    }
  }
  if (found_k != 1 || found_j != 1 || t.c_row_stride == 0) return std::nullopt;
  t.m = extent[t.i_var];
  t.n = extent[t.j_var];
  t.k = extent[t.k_var];
  if (t.m > kAmxMaxRows || t.n > kAmxMaxCols || t.k > kAmxMaxDepth || t.k % 2 != 0)
    return std::nullopt;
  // A moves with i (and k), B with j (and k).
  P::Expr x = prod->args[0], y = prod->args[1];
  if (!operand_load(x) || !operand_load(y)) return std::nullopt;
  if (uses(x, t.j_var)) std::swap(x, y);
  t.a = AmxOperand{x, operand_load(x)};
  t.b = AmxOperand{y, operand_load(y)};
  if (!strides_of(t.a, t.i_var, t.k_var, t.j_var) || t.a.pairs ||
      !strides_of(t.b, t.k_var, t.j_var, t.i_var))
    return std::nullopt;
  t.a.direct = is_bf16(t.a.load->buffer->dtype) && t.a.col_stride == 1;
  t.b.direct = t.b.pairs;
  return t;
}

std::optional<AmxBlock> match_amx_block(const P::StmtNode& loop) {
  if (loop.kind != P::StmtKind::For || is_amx_marked(loop) ||
      loop.for_kind == P::ForKind::Parallel || loop.for_kind == P::ForKind::ThreadBinding)
    return std::nullopt;
  std::vector<const P::StmtNode*> middle;
  const P::StmtNode* s = only_stmt(loop.body);
  while (s && s->kind == P::StmtKind::For && !is_amx_marked(*s) && middle.size() < 2) {
    if (s->for_kind == P::ForKind::Parallel || s->for_kind == P::ForKind::ThreadBinding)
      return std::nullopt;
    middle.push_back(s);
    s = only_stmt(s->body);
  }
  if (!s || !is_amx_marked(*s)) return std::nullopt;
  std::optional<AmxTile> t = match_amx_tile(*s);
  if (!t || !t->a.direct || !t->b.direct) return std::nullopt;
  AmxBlock b{*t, &loop};
  const P::StmtNode& st = *t->store;
  const P::Expr c_flat = P::flat_index(st.buffer.operator*(), st.indices);
  const int64_t k0 = loop.loop_var->var_id;
  if (uses(c_flat, k0)) return std::nullopt;
  const P::Expr& a = t->a.load;
  const P::Expr& bl = t->b.load;
  auto moves = [](const P::Expr& load, int64_t v) {
    for (const P::Expr& i : load->args)
      if (uses(i, v)) return true;
    return false;
  };
  for (const P::StmtNode* m : middle) {
    const int64_t v = m->loop_var->var_id;
    const bool in_a = moves(a, v), in_b = moves(bl, v);
    if (in_a && !in_b && b.rows_var < 0) {
      b.rows_var = v;
      b.rows = m->extent;
    } else if (in_b && !in_a && b.cols_var < 0) {
      b.cols_var = v;
      b.cols = m->extent;
    } else {
      return std::nullopt;
    }
    if (!uses(c_flat, v)) return std::nullopt;
  }
  if (b.rows * b.cols + b.rows + b.cols > kAmxTileRegisters) return std::nullopt;
  return b;
}

std::optional<PairCopy> match_pair_copy(const P::StmtNode& outer) {
  std::vector<const P::StmtNode*> loops;
  const P::StmtNode* st = &outer;
  while (st && st->kind == P::StmtKind::For) {
    if (st->for_kind == P::ForKind::Parallel || st->for_kind == P::ForKind::ThreadBinding ||
        st->extent <= 0)
      return std::nullopt;
    loops.push_back(st);
    st = only_stmt(st->body);
  }
  if (loops.size() < 2 || !st || st->kind != P::StmtKind::Store) return std::nullopt;
  // The store as the load of the same place would be: [.., r // 2, c, r % 2].
  auto probe = std::make_shared<P::ExprNode>();
  probe->kind = P::ExprKind::Load;
  probe->dtype = st->buffer->dtype;
  probe->buffer = st->buffer;
  probe->args = st->indices;
  const std::optional<PairIndex> at = pair_index(P::Expr(probe));
  if (!at) return std::nullopt;
  // c's loops enumerate it in order: the innermost by 1, each outer one by the extents inside.
  auto columns = [&](const std::vector<const P::StmtNode*>& cl, int64_t row) {
    if (uses(at->col, row)) return false;
    int64_t stride = 1;
    for (auto it = cl.rbegin(); it != cl.rend(); ++it) {
      if (P::affine_coefficient(at->col, (*it)->loop_var->var_id) != stride ||
          uses(at->row, (*it)->loop_var->var_id))
        return false;
      stride *= (*it)->extent;
    }
    return true;
  };
  PairCopy pc;
  pc.store = st;
  std::vector<const P::StmtNode*> cl;
  const int64_t first = loops.front()->loop_var->var_id, last = loops.back()->loop_var->var_id;
  if (even_but(at->row, first) &&
      columns(cl = std::vector<const P::StmtNode*>(loops.begin() + 1, loops.end()), first)) {
    pc.row_var = first;
    pc.rows = loops.front()->extent;
  } else if (loops.size() == 2 && even_but(at->row, last) && columns(cl = {loops.front()}, last)) {
    pc.row_var = last;
    pc.rows = loops.back()->extent;
  } else {
    return std::nullopt;
  }
  pc.cols = 1;
  for (const P::StmtNode* l : cl) {
    pc.col_loops.emplace_back(l->loop_var->var_id, l->extent);
    pc.cols *= l->extent;
  }
  for (size_t d = 0; d + 3 < st->indices.size(); ++d)
    for (const P::StmtNode* l : loops)
      if (uses(st->indices[d], l->loop_var->var_id)) return std::nullopt;
  // Which way the loads run contiguously: every load moving with r does so by 1, or every load
  // moving with c's innermost loop does (and with its outer loops as c does); none reads the
  // panel itself.
  const int64_t inner = pc.col_loops.back().first;
  bool ok = true, rows_contiguous = true, cols_contiguous = true;
  P::post_order_visit(st->value, [&](const P::Expr& x) {
    if (x->kind != P::ExprKind::Load) return;
    if (x->buffer->id == st->buffer->id) ok = false;
    const P::Expr flat = P::flat_index(*x->buffer, x->args);
    if (uses(flat, pc.row_var) && P::affine_coefficient(flat, pc.row_var) != 1)
      rows_contiguous = false;
    if (uses(flat, inner) && P::affine_coefficient(flat, inner) != 1) cols_contiguous = false;
  });
  if (!ok || pc.col_loops.back().second % kAmxMaxCols != 0) return std::nullopt;
  if (cols_contiguous && pc.rows % 2 == 0) return pc;
  if (rows_contiguous && pc.rows % kAmxMaxDepth == 0) {
    pc.along_rows = true;
    return pc;
  }
  return std::nullopt;
}

namespace {

using Role = AmxRole;

// Rebuilds a program with some buffers retyped to bf16 (and B's in pairs): each load and store
// of them indexed anew, each stored value rounded.
class OperandLayout {
public:
  explicit OperandLayout(AmxRoles roles) : roles_(std::move(roles)) {}

  P::Program program(const P::Program& p) {
    P::Program out = p;
    out.body = stmt(p.body);
    for (P::Buffer& b : out.params)
      if (const P::Buffer* r = replaced(b)) b = *r;
    return out;
  }

private:
  P::Stmt stmt(const P::Stmt& s) {
    return map_stmts(
        s, [&](const P::Expr& e) { return expr(e); },
        [&](const P::StmtNode& old, P::StmtNode& n) {
          if (old.kind != P::StmtKind::Allocate && old.kind != P::StmtKind::Store) return;
          const P::Buffer* b = replaced(old.buffer);
          if (!b) return;
          n.buffer = *b;
          if (old.kind != P::StmtKind::Store) return;
          n.indices = in_pairs(old.buffer->id, std::move(n.indices));
          n.value = P::make_cast(P::DType::bf16(), n.value);
        });
  }

  const P::Buffer* replaced(const P::Buffer& b) {
    if (!b) return nullptr;
    auto role = roles_.find(b->id);
    if (role == roles_.end()) return nullptr;
    auto it = buffers_.find(b->id);
    if (it == buffers_.end()) {
      auto n = std::make_shared<P::BufferNode>(*b);
      n->dtype = P::DType::bf16();
      if (role->second == Role::B) {
        const int64_t rows = n->shape[n->shape.size() - 2];
        n->shape[n->shape.size() - 2] = rows / 2;
        n->shape.push_back(2);
      }
      it = buffers_.emplace(b->id, P::Buffer(std::move(n))).first;
    }
    return &it->second;
  }

  // Indices of buffer `id` (already mapped) as its new layout takes them.
  std::vector<P::Expr> in_pairs(int64_t id, std::vector<P::Expr> out) {
    if (roles_.at(id) == Role::B) {
      const P::Expr row = out[out.size() - 2];
      out[out.size() - 2] = P::floordiv(row, P::Expr(int64_t{2}));
      out.push_back(P::floormod(row, P::Expr(int64_t{2})));
    }
    return out;
  }

  P::Expr expr(const P::Expr& e) {
    if (!e) return e;
    auto known = done_.find(e.get());
    if (known != done_.end()) return known->second;
    auto n = std::make_shared<P::ExprNode>(*e);
    for (P::Expr& a : n->args)
      a = expr(a);
    if (e->kind == P::ExprKind::Load)
      if (const P::Buffer* b = replaced(e->buffer)) {
        n->buffer = *b;
        n->args = in_pairs(e->buffer->id, std::move(n->args));
      }
    return done_.emplace(e.get(), P::Expr(std::move(n))).first->second;
  }

  AmxRoles roles_;
  std::unordered_map<int64_t, P::Buffer> buffers_;
  std::unordered_map<const P::ExprNode*, P::Expr> done_;
};

} // namespace

AmxRoles amx_operand_roles(const P::Program& p) {
  // Per buffer: its loads in all, and those that are a marked product's operand, by role.
  std::unordered_map<int64_t, int64_t> loads;
  std::unordered_map<int64_t, std::map<Role, int64_t>> as_operand;
  std::unordered_map<int64_t, const P::BufferNode*> allocated;
  P::visit_stmts(p.body, [&](const P::Stmt& s) {
    if (s->kind == P::StmtKind::Allocate) allocated[s->buffer->id] = s->buffer.get();
    auto count = [&](const P::Expr& e) {
      if (!e) return;
      P::post_order_visit(e, [&](const P::Expr& x) {
        if (x->kind == P::ExprKind::Load) ++loads[x->buffer->id];
      });
    };
    for (const P::Expr& i : s->indices)
      count(i);
    count(s->value);
    count(s->condition);
    if (is_amx_marked(*s))
      if (std::optional<AmxTile> t = match_amx_tile(*s)) {
        // A's rows must be contiguous along k; B (not yet in pairs) contiguous along j, with
        // its rows along k in the second-last dimension -- what pairs up rows 2p and 2p + 1.
        if (t->a.col_stride == 1) ++as_operand[t->a.load->buffer->id][Role::A];
        const P::Expr& bl = t->b.load;
        const size_t n = bl->args.size();
        if (!t->b.pairs && n >= 2 && t->b.col_stride == 1 && bl->buffer->shape[n - 2] % 2 == 0 &&
            P::affine_coefficient(bl->args[n - 2], t->k_var) == 1 &&
            P::affine_coefficient(bl->args[n - 1], t->j_var) == 1 &&
            !uses(bl->args[n - 1], t->k_var) && !uses(bl->args[n - 2], t->j_var))
          ++as_operand[bl->buffer->id][Role::B];
      }
    return true;
  });
  AmxRoles roles;
  for (const auto& [id, by_role] : as_operand) {
    auto a = allocated.find(id);
    if (a == allocated.end() || by_role.size() != 1 ||
        !(is_f32(a->second->dtype) || is_bf16(a->second->dtype)))
      continue;
    const auto& [role, n] = *by_role.begin();
    if (n == loads[id]) roles.emplace(id, role);
  }
  return roles;
}

P::Program with_amx_layout(const P::Program& p, const AmxRoles& roles) {
  if (roles.empty()) return p;
  return OperandLayout(roles).program(p);
}

P::Program with_amx_operands(const P::Program& p) {
  return with_amx_layout(p, amx_operand_roles(p));
}

} // namespace mt::llvm_cpu
