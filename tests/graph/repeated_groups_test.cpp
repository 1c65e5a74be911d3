// Groups that compute the same function of the same tensors run once (repeated_groups.h):
// two equal row sums of one input become one group, the product reading both reads the first
// twice and still computes what a double-precision reference does; a group the caller reads
// stays. (In a rotary Llama every layer's cosine table is one kernel: hf_llama_test.cpp.)
#include <gtest/gtest.h>

#include <map>

#include "core/graph/fusion.h"
#include "core/lower/interpreter.h"
#include "core/runtime/ndarray.h"

namespace mt {
namespace {

te::Tensor row_sum(const te::Tensor& a) {
  return te::compute(
      {a.shape()[0]},
      [&](const std::vector<Expr>& i) {
        te::Var k = te::reduce_axis(a.shape()[1], "k");
        return te::sum(a(i[0], k), {k});
      },
      "row_sum");
}

// Runs the groups one after the other through the interpreter; the arrays of every tensor.
std::map<const te::TensorNode*, NDArray> run_groups(const std::vector<FusedGroup>& groups,
                                                    const te::Tensor& input, const NDArray& x) {
  std::map<const te::TensorNode*, NDArray> value;
  value.emplace(input.get(), x);
  for (const FusedGroup& g : groups) {
    std::vector<NDArray> outs;
    for (const te::Tensor& o : g.outputs)
      outs.emplace_back(o.dtype(), o.shape());
    std::vector<NDArray*> args;
    for (const te::Tensor& in : g.inputs)
      args.push_back(&value.at(in.get()));
    for (NDArray& o : outs)
      args.push_back(&o);
    interpret(g.func, args);
    for (size_t o = 0; o < outs.size(); ++o)
      value.emplace(g.outputs[o].get(), std::move(outs[o]));
  }
  return value;
}

TEST(RepeatedGroups, AFunctionOfTheSameTensorsRunsOnce) {
  te::Tensor a = te::placeholder({4, 8}, DType::f32(), "a");
  te::Tensor s1 = row_sum(a), s2 = row_sum(a);
  te::Tensor dot = te::compute(
      {1},
      [&](const std::vector<Expr>&) {
        te::Var k = te::reduce_axis(4, "k");
        return te::sum(s1(k) * s2(k), {k});
      },
      "dot");
  std::vector<FusedGroup> groups = fuse({dot});
  ASSERT_EQ(groups.size(), 2u) << "one row sum and the product";
  ASSERT_EQ(groups[1].inputs.size(), 2u);
  EXPECT_EQ(groups[1].inputs[0].get(), s1.get());
  EXPECT_EQ(groups[1].inputs[1].get(), s1.get()) << "the dropped sum's reader reads the first";

  NDArray x(DType::f32(), {4, 8});
  x.fill_random(3);
  std::map<const te::TensorNode*, NDArray> v = run_groups(groups, a, x);
  double want = 0;
  for (int64_t i = 0; i < 4; ++i) {
    double s = 0;
    for (int64_t k = 0; k < 8; ++k)
      s += x.get_double(i * 8 + k);
    want += s * s;
  }
  EXPECT_NEAR(v.at(dot.get()).get_double(0), want, 1e-5 * std::max(1.0, std::abs(want)));

  // Both sums read by the caller: both stay, each its own output.
  EXPECT_EQ(fuse({s1, s2}).size(), 2u);
}

} // namespace
} // namespace mt
