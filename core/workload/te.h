// Tensor expressions: a small declarative language for defining workloads (placeholders,
// injective computes, reductions, padding) and `build`, which turns a graph of them into a
// tensor-IR Function with one block per compute and a default serial loop nest per block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/dtype.h"
#include "core/ir/expr.h"
#include "core/ir/function.h"

namespace mt::te {

// An axis variable with its domain [0, extent). Usable wherever an Expr is (it is one).
class Var : public Expr {
public:
  Var() = default;
  Var(Expr var, int64_t extent) : Expr(std::move(var)), extent_(extent) {}
  int64_t extent() const { return extent_; }

private:
  int64_t extent_ = 0;
};

// A reduction axis to be used by sum/max_reduce/min_reduce inside a compute.
Var reduce_axis(int64_t extent, std::string name);

// Sum, Max, Min: members and values from MT_REDUCE_KINDS (plugin_api/ir_vocabulary.h).
enum class ReduceKind : uint8_t { MT_REDUCE_KINDS(MT_VOCAB_ENUMERATOR) };
const char* to_string(ReduceKind k);

// The value of a reduction compute: combine `source` over every point of `axes`.
struct ReduceExpr {
  ReduceKind kind = ReduceKind::Sum;
  Expr source;
  std::vector<Var> axes;
};
ReduceExpr sum(Expr source, std::vector<Var> axes);
ReduceExpr max_reduce(Expr source, std::vector<Var> axes);
ReduceExpr min_reduce(Expr source, std::vector<Var> axes);
// Start value of a reduction of `kind` over values of type `t` (0, lowest, highest).
Expr reduce_identity(ReduceKind kind, DType t);
// One combination step: acc + v, max(acc, v), min(acc, v).
Expr reduce_combine(ReduceKind kind, Expr acc, Expr v);

class Tensor;

// What a tensor is: a placeholder (input) or a compute over its spatial axes. Immutable once
// created; shared by every Tensor handle that refers to it.
struct TensorNode {
  Buffer buffer;   // name, dtype and shape of the tensor
  uint64_t id = 0; // creation order: a topological order of the tensor graph
  bool placeholder = true;
  // Compute tensors only.
  std::vector<Expr> axes;       // one spatial variable per dimension
  std::vector<Var> reduce_axes; // reductions only
  std::optional<ReduceKind> reduce;
  Expr value;                 // injective value, or the reduction source
  std::vector<Tensor> inputs; // tensors read by `value`, in order of first access
};

// Value-style handle to a TensorNode.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}

  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  bool same_as(const Tensor& o) const { return node_ == o.node_; }

  const std::string& name() const { return node_->buffer->name; }
  DType dtype() const { return node_->buffer->dtype; }
  const std::vector<int64_t>& shape() const { return node_->buffer->shape; }
  size_t ndim() const { return node_->buffer->shape.size(); }
  const Buffer& buffer() const { return node_->buffer; }
  bool is_placeholder() const { return node_->placeholder; }

  // Element access: a Load of this tensor (only valid inside a compute function).
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Idx>
  requires(sizeof...(Idx) != 1 ||
           !(std::is_convertible_v<std::remove_cvref_t<Idx>, std::vector<Expr>> && ...)) Expr
  operator()(Idx&&... indices) const {
    return (*this)(std::vector<Expr>{Expr(std::forward<Idx>(indices))...});
  }

private:
  std::shared_ptr<const TensorNode> node_;
};

Tensor placeholder(std::vector<int64_t> shape, DType dtype, std::string name);

using ComputeFn = std::function<Expr(const std::vector<Expr>&)>;
using ReduceFn = std::function<ReduceExpr(const std::vector<Expr>&)>;

// out[axes] = fn(axes). `axis_names` names the spatial axes (default i, j, k, l, ...); they
// become the block iter var and loop var names.
Tensor compute(std::vector<int64_t> shape, const ComputeFn& fn, std::string name,
               std::vector<std::string> axis_names = {});
// out[axes] = reduction returned by fn(axes).
Tensor compute(std::vector<int64_t> shape, const ReduceFn& fn, std::string name,
               std::vector<std::string> axis_names = {});

// t padded with `value` by pads_before[d] / pads_after[d] elements in each dimension (missing
// trailing entries mean 0). The source index is clamped into bounds, so the load is always
// legal whatever the evaluation order of the select.
Tensor pad(const Tensor& t, std::vector<int64_t> pads_before, std::vector<int64_t> pads_after,
           Expr value, std::string name = "pad", std::vector<std::string> axis_names = {});

// The Function computing `outputs` from `inputs`: params = inputs then outputs; every compute
// in between becomes one block (named after its tensor, made unique), intermediates go to
// Function::buffers, and each block gets a serial loop nest (spatial axes, then reduction axes)
// at root, in definition order.
Function build(std::string name, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs);
// As build, but an input may be a compute as well: the region of the graph between `inputs`
// and `outputs` (a fused part of a model, core/graph), every input a param.
Function build_region(std::string name, const std::vector<Tensor>& inputs,
                      const std::vector<Tensor>& outputs);

} // namespace mt::te
