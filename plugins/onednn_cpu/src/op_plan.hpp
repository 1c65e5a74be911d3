// What a recogniser found, independent of oneDNN's types: one main operator over the caller's
// tensors (each seen as a logical N-D view of a parameter: oneDNN's dims in oneDNN's order,
// with the parameter's element strides) and the elementwise steps fused after it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mt::onednn {

// A logical view of parameter `param`: dims in the operator's order, strides and the offset
// of element [0, ..., 0] from the parameter's first element in elements.
struct TensorRef {
  size_t param = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

enum class Alg {
  // eltwise
  Relu,
  GeluErf,
  GeluTanh,
  Logistic,
  Swish, // x * sigmoid(x): SiLU, SwiGLU's gate
  Tanh,
  Exp,
  Log,
  Sqrt,
  Abs,
  Linear, // alpha * x + beta
  // binary
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  // dst = keep ? dst : fill (an attention mask), keep the conjunction of PostOp::conds
  Select,
};
const char* to_string(Alg a);
inline bool is_binary(Alg a) {
  return a >= Alg::Add && a != Alg::Select;
}

enum class Cmp { LT, LE, GT, GE, EQ, NE };

// One conjunct of a Select's condition, over the dst dims (a dim of 1 where it does not vary):
// either known when the plan is made (it depends on the element's position only: a causal
// mask) or a comparison of a tensor element, read per call, with a constant (a padding mask)
// or with an index of the element (a decode step's causal mask: key l kept while l <= the
// query's position, a tensor).
struct Condition {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;  // known: row-major over dims
  std::optional<TensorRef> src; // else: src[...] cmp threshold, or cmp the index below
  bool src_i32 = false;         // src holds int32 elements (else f32)
  Cmp cmp = Cmp::GT;
  double threshold = 0;
  // Where not empty, src is compared with this index of the element instead of the threshold:
  // its values row-major over index_dims (a dim of 1 where it does not vary).
  std::vector<int64_t> index_dims;
  std::vector<int64_t> index_values;
};

// One step after the main operator: dst = alg(dst[, src1]).
struct PostOp {
  Alg alg = Alg::Relu;
  float alpha = 1, beta = 0; // Linear
  TensorRef src1;            // binary ops: broadcast over the dst dims (dims of 1)
  float fill = 0;            // Select
  std::vector<Condition> conds;
};
inline PostOp eltwise_step(Alg alg, float alpha = 1, float beta = 0) {
  PostOp p;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

struct MatmulOp {
  TensorRef src, weights, dst; // [batch..., M, K], [batch..., K, N], [batch..., M, N]
  std::optional<TensorRef> bias;
};

struct ConvOp {
  TensorRef src, weights, dst; // [N, C, sp...], [(G,) OC, IC, k...], [N, OC, sp...]
  std::optional<TensorRef> bias;
  int64_t groups = 1;
  std::vector<int64_t> strides, dilates /* oneDNN's: dilation - 1 */, pad_l, pad_r;
};

struct PoolOp {
  TensorRef src, dst; // [N, C, sp...]
  bool max = true;    // else average, padding included
  std::vector<int64_t> kernel, strides, pad_l, pad_r;
};

struct SoftmaxOp {
  TensorRef src, dst;
  int axis = 0;
};

struct LayerNormOp {
  TensorRef src, dst; // normalised over the last dim
  std::optional<TensorRef> scale, shift;
  float eps = 1e-5f;
};

struct ReductionOp {
  TensorRef src, dst; // dst: src dims with the reduced ones set to 1
  enum Kind { Sum, Max, Min, NormLpSum, NormLpPowerPSum } kind = Sum;
  float p = 2;
};

struct EltwiseOp {
  TensorRef src, dst;
  PostOp op; // unary
};

struct BinaryOp {
  TensorRef src0, src1, dst;
  Alg alg = Alg::Add;
};

using MainOp = std::variant<MatmulOp, ConvOp, PoolOp, SoftmaxOp, LayerNormOp, ReductionOp,
                            EltwiseOp, BinaryOp>;

// A further primitive of a plan, run after the first.
struct PlanStep {
  MainOp op;
  std::vector<PostOp> post_ops;
};

struct Plan {
  std::string family; // "matmul", "conv2d", "softmax", ... (for logs and describe)
  std::string detail; // shapes and attributes in words
  MainOp op;
  std::vector<PostOp> post_ops;
  // A program with several outputs (slices of one result): one primitive per further output.
  std::vector<PlanStep> more;
};

} // namespace mt::onednn
