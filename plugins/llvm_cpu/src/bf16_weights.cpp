// Weights kept in bf16 (see bf16_weights.h).
#include "bf16_weights.h"

#include <cstring>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "program_walk.h"

namespace mt::llvm_cpu {

namespace P = sdk::program;

namespace {

// How a program reads each buffer, by id.
struct Reads {
  std::unordered_map<int64_t, int64_t> loads, multiplied;
  std::unordered_map<int64_t, std::vector<int64_t>> copied_to; // whole-value copies: targets
  std::unordered_set<int64_t> gathered, allocated;

  explicit Reads(const P::Program& p) {
    P::visit_stmts(p.body, [&](const P::Stmt& s) {
      switch (s->kind) {
      case P::StmtKind::Allocate:
        allocated.insert(s->buffer->id);
        break;
      case P::StmtKind::Store:
        for (const P::Expr& i : s->indices)
          note(i);
        note(s->value);
        if (s->value->kind == P::ExprKind::Load)
          copied_to[s->value->buffer->id].push_back(s->buffer->id);
        break;
      case P::StmtKind::IfThenElse:
        note(s->condition);
        break;
      default:
        break;
      }
      return true;
    });
  }

  void note(const P::Expr& e) {
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Load) {
        ++loads[x->buffer->id];
        for (const P::Expr& i : x->args)
          if (contains_load(i)) gathered.insert(x->buffer->id);
      } else if (x->kind == P::ExprKind::Mul) {
        for (const P::Expr& a : x->args)
          if (a->kind == P::ExprKind::Load) ++multiplied[a->buffer->id];
      }
    });
  }

  static bool contains_load(const P::Expr& e) {
    bool found = false;
    P::post_order_visit(e, [&](const P::Expr& x) { found |= x->kind == P::ExprKind::Load; });
    return found;
  }

  int64_t count(const std::unordered_map<int64_t, int64_t>& m, int64_t id) const {
    auto it = m.find(id);
    return it == m.end() ? 0 : it->second;
  }

  // Every load of `id` a product's operand.
  bool only_multiplied(int64_t id) const {
    return count(loads, id) > 0 && count(loads, id) == count(multiplied, id);
  }

  bool weight(int64_t id) const {
    if (gathered.count(id) || count(loads, id) == 0) return false;
    auto copies = copied_to.find(id);
    const int64_t n = copies == copied_to.end() ? 0 : static_cast<int64_t>(copies->second.size());
    if (count(loads, id) != count(multiplied, id) + n) return false;
    if (copies != copied_to.end())
      for (int64_t to : copies->second)
        if (!allocated.count(to) || !only_multiplied(to)) return false;
    return true;
  }
};

// Rebuilds the program with some buffers replaced in every load of them.
class LoadRetargeter {
public:
  explicit LoadRetargeter(std::unordered_map<int64_t, P::Buffer> to) : to_(std::move(to)) {}

  P::Expr expr(const P::Expr& e) {
    if (!e) return e;
    auto known = done_.find(e.get());
    if (known != done_.end()) return known->second;
    bool changed = false;
    std::vector<P::Expr> args;
    args.reserve(e->args.size());
    for (const P::Expr& a : e->args) {
      args.push_back(expr(a));
      changed |= !args.back().same_as(a);
    }
    P::Buffer buffer = e->buffer;
    if (e->kind == P::ExprKind::Load) {
      auto it = to_.find(e->buffer->id);
      if (it != to_.end()) {
        buffer = it->second;
        changed = true;
      }
    }
    P::Expr out = e;
    if (changed) {
      auto n = std::make_shared<P::ExprNode>(*e);
      n->args = std::move(args);
      n->buffer = std::move(buffer);
      out = P::Expr(std::move(n));
    }
    return done_.emplace(e.get(), out).first->second;
  }

  P::Stmt stmt(const P::Stmt& s) {
    return map_stmts(s, [&](const P::Expr& e) { return expr(e); });
  }

private:
  std::unordered_map<int64_t, P::Buffer> to_;
  std::unordered_map<const P::ExprNode*, P::Expr> done_;
};

} // namespace

std::vector<bool> bf16_weight_candidates(const P::Program& p) {
  Reads reads(p);
  const std::vector<bool> outputs = P::output_mask(p);
  std::vector<bool> out(p.params.size(), false);
  for (size_t i = 0; i < p.params.size(); ++i) {
    const P::BufferNode& b = *p.params[i];
    out[i] = !outputs[i] && b.dtype == P::DType::f32() && b.shape.size() >= 2 && reads.weight(b.id);
  }
  return out;
}

P::Program with_bf16_params(const P::Program& p, const std::vector<uint8_t>& bf16) {
  std::unordered_map<int64_t, P::Buffer> to;
  P::Program out = p;
  for (size_t i = 0; i < p.params.size() && i < bf16.size(); ++i) {
    if (!bf16[i]) continue;
    auto b = std::make_shared<P::BufferNode>(*p.params[i]);
    b->dtype = P::DType{P::DTypeKind::BFloat, 16};
    to.emplace(b->id, b);
    out.params[i] = std::move(b);
  }
  LoadRetargeter r(std::move(to));
  out.body = r.stmt(p.body);
  return out;
}

void round_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) {
      dst[i] = 0x7fc0; // NaN
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    dst[i] = static_cast<uint16_t>(bits >> 16);
  }
}

} // namespace mt::llvm_cpu
