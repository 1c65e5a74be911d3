// tma_copy.cpp: recognising a pipelined fetch nest as a TMA box copy (tma_copy.h).
#include "tma_copy.h"

#include <algorithm>

#include "metatune/sdk/index_analysis.hpp"

namespace mt::gpu_codegen {

namespace {

using P::ExprKind;
using P::StmtKind;
using Env = std::unordered_map<int64_t, int64_t>;

} // namespace

std::optional<int64_t> evaluate_index(const P::Expr& e,
                                      const std::unordered_map<int64_t, int64_t>& env) {
  switch (e->kind) {
  case ExprKind::IntImm:
    return e->int_value;
  case ExprKind::Var: {
    auto it = env.find(e->var_id);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  case ExprKind::Cast:
    if (!e->dtype.is_int()) return std::nullopt;
    return evaluate_index(e->args[0], env);
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::FloorDiv:
  case ExprKind::FloorMod:
  case ExprKind::Min:
  case ExprKind::Max: {
    auto a = evaluate_index(e->args[0], env), b = evaluate_index(e->args[1], env);
    if (!a || !b) return std::nullopt;
    switch (e->kind) {
    case ExprKind::Add:
      return *a + *b;
    case ExprKind::Sub:
      return *a - *b;
    case ExprKind::Mul:
      return *a * *b;
    case ExprKind::Div:
      if (*b == 0) return std::nullopt;
      return *a / *b;
    case ExprKind::FloorDiv:
      if (*b == 0) return std::nullopt;
      return P::detail::floordiv_int(*a, *b);
    case ExprKind::FloorMod:
      if (*b == 0) return std::nullopt;
      return *a - P::detail::floordiv_int(*a, *b) * *b;
    case ExprKind::Min:
      return std::min(*a, *b);
    default:
      return std::max(*a, *b);
    }
  }
  default:
    return std::nullopt;
  }
}

namespace {

std::optional<int64_t> evaluate(const P::Expr& e, const Env& env) {
  return evaluate_index(e, env);
}

void collect_vars(const P::Expr& e, std::vector<int64_t>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Var) {
    if (std::find(out.begin(), out.end(), e->var_id) == out.end()) out.push_back(e->var_id);
    return;
  }
  for (const auto& a : e->args)
    collect_vars(a, out);
}

// The nest's loops down to its one store, or nullopt when it holds anything else.
std::optional<std::vector<P::Stmt>> nest_loops(const P::Stmt& loop, P::Stmt* store) {
  std::vector<P::Stmt> loops;
  P::Stmt s = loop;
  while (s && s->kind == StmtKind::For) {
    loops.push_back(s);
    s = s->body;
    while (s && s->kind == StmtKind::Seq && s->stmts.size() == 1)
      s = s->stmts[0];
  }
  if (!s || s->kind != StmtKind::Store) return std::nullopt;
  *store = s;
  return loops;
}

// Running the nest: every iteration's shared and global indices, checked against the box.
class BoxCheck {
public:
  BoxCheck(TmaCopy& copy, const std::vector<P::Stmt>& loops) : c_(copy), loops_(loops) {}

  // One setting of the variables outside the nest (`outer`); `record`: note each box's first
  // iteration.
  bool run(const Env& outer, bool record, std::string* why) {
    env_ = outer;
    moves_.clear();
    if (!iterate(0, why)) return false;
    std::vector<bool> seen(static_cast<size_t>(c_.rows * c_.cols), false);
    for (const Move& m : moves_) {
      const int64_t r = m.s[1], c = m.s[2];
      if (r < 0 || r >= c_.rows || c < 0 || c >= c_.cols)
        return fail(why, "an index leaves the shared tile");
      if (m.s[0] != moves_[0].s[0]) return fail(why, "the slot changes within the nest");
      const auto at = static_cast<size_t>(r * c_.cols + c);
      if (seen[at]) return fail(why, "an element of the tile is moved twice");
      seen[at] = true;
    }
    if (std::find(seen.begin(), seen.end(), false) != seen.end())
      return fail(why, "the nest does not move every element of the tile");
    // g - (r along the row dimension, c along the last) is one origin for every iteration.
    const size_t rank = moves_[0].g.size();
    auto origin_holds = [&](size_t row_dim) {
      std::vector<int64_t> first;
      for (const Move& m : moves_) {
        std::vector<int64_t> o = m.g;
        o[rank - 1] -= m.s[2];
        o[row_dim] -= m.s[1];
        if (first.empty()) first = o;
        if (o != first) return false;
      }
      return true;
    };
    c_.row_dim = -1;
    for (size_t d = 0; d + 1 < rank && c_.row_dim < 0; ++d)
      if (origin_holds(d)) c_.row_dim = static_cast<int>(d);
    if (c_.row_dim < 0)
      return fail(why, "the global index is not the tile's index plus one origin");
    if (record)
      for (const Move& m : moves_)
        if (m.s[1] == 0 && m.s[2] % kTmaBoxCols == 0)
          c_.boxes[static_cast<size_t>(m.s[2] / kTmaBoxCols)].first = m.nest;
    return true;
  }

private:
  struct Move {
    std::vector<int64_t> s, g; // the shared and the global indices
    Env nest;                  // the nest's variables
  };

  bool iterate(size_t depth, std::string* why) {
    if (depth == loops_.size()) return visit(why);
    const P::Stmt& l = loops_[depth];
    for (int64_t v = 0; v < l->extent; ++v) {
      env_[l->loop_var->var_id] = v;
      if (!iterate(depth + 1, why)) return false;
    }
    return true;
  }

  bool visit(std::string* why) {
    Move m;
    for (const auto& e : c_.store->indices) {
      auto v = evaluate(e, env_);
      if (!v) return fail(why, "a shared index is not integer arithmetic of loop variables");
      m.s.push_back(*v);
    }
    for (const auto& e : c_.store->value->args) {
      auto v = evaluate(e, env_);
      if (!v) return fail(why, "a global index is not integer arithmetic of loop variables");
      m.g.push_back(*v);
    }
    if (m.s[1] == 0 && m.s[2] % kTmaBoxCols == 0)
      for (const auto& l : loops_)
        m.nest[l->loop_var->var_id] = env_.at(l->loop_var->var_id);
    moves_.push_back(std::move(m));
    return true;
  }

  static bool fail(std::string* why, const char* text) {
    *why = text;
    return false;
  }

  TmaCopy& c_;
  const std::vector<P::Stmt>& loops_;
  Env env_;
  std::vector<Move> moves_;
};

} // namespace

std::optional<TmaCopy> match_tma_copy(const P::Stmt& loop, std::string* why) {
  TmaCopy c;
  auto loops = nest_loops(loop, &c.store);
  if (!loops) {
    *why = "the fetch is not a loop nest around one store";
    return std::nullopt;
  }
  const P::Stmt& st = c.store;
  if (!st->value || st->value->kind != ExprKind::Load) {
    *why = "the fetch's store does not copy a loaded element";
    return std::nullopt;
  }
  c.shared = st->buffer;
  c.global = st->value->buffer;
  const auto& S = *c.shared;
  const auto& G = *c.global;
  if (S.scope != "shared" || G.scope != "global" || !(S.dtype == G.dtype) || S.dtype.bits != 16) {
    *why = "TMA here copies 16-bit elements from device memory into shared memory unchanged";
    return std::nullopt;
  }
  if (S.shape.size() != 3 || st->indices.size() != 3) {
    *why = "the shared tile is not [slots, rows, columns]";
    return std::nullopt;
  }
  c.rows = S.shape[1];
  c.cols = S.shape[2];
  if (c.cols % kTmaBoxCols || c.rows % 8 || c.rows > kTmaMaxBoxRows) {
    *why = "the tile is not whole 128-byte rows, 8 to 256 of them";
    return std::nullopt;
  }
  if (G.shape.size() < 2 || G.shape.size() > 5 || G.shape.back() % 8) {
    *why = "the global tensor has not 2 to 5 dimensions with rows of whole 16 bytes";
    return std::nullopt;
  }
  int64_t iterations = 1;
  for (const auto& l : *loops) {
    iterations *= l->extent;
    if (iterations > (int64_t{1} << 17)) {
      *why = "the nest is too long to check";
      return std::nullopt;
    }
  }
  std::vector<int64_t> nest_ids, outer;
  for (const auto& l : *loops) {
    nest_ids.push_back(l->loop_var->var_id);
    c.vars.push_back(l->loop_var);
  }
  for (const auto& e : st->indices)
    collect_vars(e, outer);
  for (const auto& e : st->value->args)
    collect_vars(e, outer);
  std::erase_if(outer, [&](int64_t id) {
    return std::find(nest_ids.begin(), nest_ids.end(), id) != nest_ids.end();
  });
  c.boxes.resize(static_cast<size_t>(c.cols / kTmaBoxCols));
  BoxCheck check(c, *loops);
  // The variables outside the nest at 0, then at small distinct values: a slot or origin that
  // depended on the nest's variables in a way that cancels at 0 shows at the second.
  Env zero, other;
  for (size_t i = 0; i < outer.size(); ++i) {
    zero[outer[i]] = 0;
    other[outer[i]] = static_cast<int64_t>(1 + i % 3);
  }
  if (!check.run(zero, true, why) || !check.run(other, false, why)) return std::nullopt;
  if (c.row_dim < 0) {
    *why = "no dimension of the global tensor follows the rows";
    return std::nullopt;
  }
  return c;
}

} // namespace mt::gpu_codegen
