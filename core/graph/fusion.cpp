// Cutting a tensor-expression graph into fused groups (see fusion.h).
#include "core/graph/fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/repeated_groups.h"

namespace mt {

bool is_contraction(const te::Tensor& t) {
  if (t.is_placeholder() || !t->reduce) return false;
  std::unordered_set<const ExprNode*> axes;
  for (const te::Var& r : t->reduce_axes)
    axes.insert(r.get());
  // Buffers loaded at an index that mentions a reduction axis.
  std::set<const BufferNode*> indexed;
  post_order_visit(t->value, [&](const Expr& e) {
    if (e->kind != ExprKind::Load) return;
    bool uses = false;
    for (const Expr& idx : e->args)
      post_order_visit(idx, [&](const Expr& x) { uses = uses || axes.count(x.get()); });
    if (uses) indexed.insert(e->buffer.get());
  });
  return indexed.size() >= 2;
}

namespace {

enum class Kind { Elementwise, RowReduction, Contraction };

Kind kind_of(const te::Tensor& t) {
  if (!t->reduce) return Kind::Elementwise;
  return is_contraction(t) ? Kind::Contraction : Kind::RowReduction;
}

class Fuser {
public:
  explicit Fuser(const std::vector<te::Tensor>& outputs) : outputs_(outputs) {
    collect();
    for (const te::Tensor& t : computes_)
      place(t);
  }

  std::vector<FusedGroup> groups() {
    std::vector<FusedGroup> out;
    std::set<std::string> names;
    std::unordered_set<const te::TensorNode*> model_outputs;
    for (const te::Tensor& t : outputs_)
      model_outputs.insert(t.get());
    for (Group& g : groups_) {
      FusedGroup f;
      f.computes = g.members;
      f.has_contraction = g.contraction;
      std::unordered_set<const te::TensorNode*> in_group, inputs_seen;
      for (const te::Tensor& t : g.members)
        in_group.insert(t.get());
      for (const te::Tensor& t : g.members) {
        for (const te::Tensor& in : t->inputs)
          if (!in_group.count(in.get()) && inputs_seen.insert(in.get()).second)
            f.inputs.push_back(in);
        bool read_outside = model_outputs.count(t.get()) > 0;
        for (const te::TensorNode* c : consumers_[t.get()])
          read_outside = read_outside || !in_group.count(c);
        if (read_outside) f.outputs.push_back(t);
      }
      const te::Tensor& anchor = g.anchor ? g.anchor : g.members.front();
      std::string base = "fused_" + anchor.name();
      f.name = base;
      for (int k = 1; !names.insert(f.name).second; ++k)
        f.name = base + "_" + std::to_string(k);
      f.func = te::build_region(f.name, f.inputs, f.outputs);
      out.push_back(std::move(f));
    }
    return out;
  }

private:
  struct Group {
    std::vector<te::Tensor> members;
    te::Tensor anchor; // the contraction, else the first row reduction
    bool contraction = false, row_reduction = false;
    std::set<size_t> deps; // groups this one reads, transitively
  };

  void collect() {
    std::unordered_set<const te::TensorNode*> seen;
    std::vector<te::Tensor> stack(outputs_.begin(), outputs_.end());
    while (!stack.empty()) {
      te::Tensor t = stack.back();
      stack.pop_back();
      if (!seen.insert(t.get()).second || t.is_placeholder()) continue;
      computes_.push_back(t);
      for (const te::Tensor& in : t->inputs) {
        consumers_[in.get()].push_back(t.get());
        stack.push_back(in);
      }
    }
    // Creation order is a topological order of the graph.
    std::sort(computes_.begin(), computes_.end(),
              [](const te::Tensor& a, const te::Tensor& b) { return a->id < b->id; });
  }

  bool compatible(const Group& g, Kind k) const {
    switch (k) {
    case Kind::Elementwise:
      return true;
    case Kind::RowReduction:
      return !g.contraction;
    case Kind::Contraction:
      return !g.contraction && !g.row_reduction;
    }
    return false;
  }

  // Work after a contraction is its epilogue, over the contraction's output (or a slice of
  // it). An elementwise compute larger than that output -- a decode step's keys, this step's
  // rows spliced into the whole cache -- is a copy of its own: fused, it would hide the
  // contraction from a library that implements it.
  static bool outgrows(const Group& g, const te::Tensor& t, Kind k) {
    if (k != Kind::Elementwise || !g.contraction) return false;
    auto elements = [](const te::Tensor& x) {
      int64_t n = 1;
      for (int64_t d : x.shape())
        n *= d;
      return n;
    };
    return elements(t) > elements(g.anchor);
  }

  // A contraction joins elementwise work only where that work reads the model's inputs alone
  // (an embedding gather): work on other groups' outputs before it (a rotary embedding of q
  // and k, a decode step's keys) would be recomputed for every term of its reduction, and
  // would hide it from a library. Such work stays a kernel of its own.
  void place(const te::Tensor& t) {
    Kind k = kind_of(t);
    std::set<size_t> producers;
    for (const te::Tensor& in : t->inputs)
      if (auto it = group_of_.find(in.get()); it != group_of_.end()) producers.insert(it->second);
    // The latest producer's group, if nothing else read depends on it.
    if (!producers.empty()) {
      size_t g = *producers.rbegin();
      bool ok = compatible(groups_[g], k) && !outgrows(groups_[g], t, k) &&
                !(k == Kind::Contraction && !groups_[g].deps.empty());
      for (size_t h : producers)
        if (h != g && groups_[h].deps.count(g)) ok = false;
      if (ok) {
        join(g, t, k, producers);
        return;
      }
    }
    groups_.emplace_back();
    join(groups_.size() - 1, t, k, producers);
  }

  void join(size_t g, const te::Tensor& t, Kind k, const std::set<size_t>& producers) {
    Group& grp = groups_[g];
    grp.members.push_back(t);
    group_of_[t.get()] = g;
    if (k == Kind::Contraction) {
      grp.contraction = true;
      grp.anchor = t;
    } else if (k == Kind::RowReduction) {
      if (!grp.row_reduction && !grp.contraction) grp.anchor = t;
      grp.row_reduction = true;
    }
    for (size_t h : producers) {
      if (h == g) continue;
      grp.deps.insert(h);
      grp.deps.insert(groups_[h].deps.begin(), groups_[h].deps.end());
    }
  }

  const std::vector<te::Tensor>& outputs_;
  std::vector<te::Tensor> computes_;
  std::unordered_map<const te::TensorNode*, std::vector<const te::TensorNode*>> consumers_;
  std::unordered_map<const te::TensorNode*, size_t> group_of_;
  std::vector<Group> groups_;
};

} // namespace

std::vector<FusedGroup> fuse(const std::vector<te::Tensor>& outputs) {
  return without_repeated_groups(Fuser(outputs).groups(), outputs);
}

} // namespace mt
