#include "core/graph/last_position.h"

#include <string>
#include <vector>

#include "core/ir/expr.h"

namespace mt {

bool keep_last_position_logits(ModelGraph& g) {
  if (g.num_root_outputs < 1 || g.outputs.empty()) return false;
  const te::Tensor logits = g.outputs[0];
  if (logits.is_placeholder() || logits.ndim() != 3 || logits->axes.size() != 3) return false;
  const int64_t batch = logits.shape()[0], seq = logits.shape()[1], vocab = logits.shape()[2];
  const te::TensorNode& n = *logits.get();
  te::Tensor last = te::placeholder({batch}, DType::i32(), "last_position");

  // The original value with the sequence axis replaced by the (clamped) run-time position.
  // The tensors it reads are accessed here too, so that the new compute knows its inputs.
  auto value_at = [&](const std::vector<Expr>& v) {
    for (const te::Tensor& in : n.inputs)
      in(std::vector<Expr>(in.ndim(), int_imm(0)));
    Expr pos = make_cast(DType::index(), last(v[0]));
    pos = min(max(pos, int_imm(0)), int_imm(seq - 1));
    VarMap m{{n.axes[0].get(), v[0]}, {n.axes[1].get(), pos}, {n.axes[2].get(), v[2]}};
    return substitute(n.value, m);
  };
  std::vector<std::string> names;
  for (const Expr& a : n.axes)
    names.push_back(a->name);
  const std::string name = logits.name() + "_last";
  te::Tensor kept =
      n.reduce ? te::compute({batch, 1, vocab}, te::ReduceFn([&](const std::vector<Expr>& v) {
                               return te::ReduceExpr{*n.reduce, value_at(v), n.reduce_axes};
                             }),
                             name, names)
               : te::compute({batch, 1, vocab}, te::ComputeFn(value_at), name, names);
  g.outputs[0] = kept;
  g.inputs.push_back(last);
  g.last_position_input = g.inputs.size() - 1;
  return true;
}

} // namespace mt
