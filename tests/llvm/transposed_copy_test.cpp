// A copy that transposes (plugins/llvm_cpu/src/transposed_copy.h) -- the packing of a weight
// stored [N, K] into [K, N] -- moved in square blocks transposed in registers: against a plain
// loop written here, with an elementwise function of the loads, a bias along the stored axis,
// extents that do not divide into blocks (the loop as it was) and a bf16 destination.
#include <gtest/gtest.h>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

// P[k, n] = W[n, k] * 0.5 + bias[n] - k: for k (serial), for n (vectorized). `out` bf16 or f32.
P::Program pack_program(int n, int k, P::DType out) {
  auto W = P::make_buffer("W", P::DType::f32(), {n, k});
  auto bias = P::make_buffer("bias", P::DType::f32(), {n});
  auto Pk = P::make_buffer("P", out, {k, n});
  auto a = P::make_var("a"), v = P::make_var("v");
  P::Expr value =
      P::make_load(W, {v, a}) * 0.5 + P::make_load(bias, {v}) - P::make_cast(P::DType::f32(), a);
  if (!(out == P::DType::f32())) value = P::make_cast(out, value);
  auto body = P::make_for(
      a, k, P::make_for(v, n, P::make_store(Pk, {a, v}, value), P::ForKind::Vectorized));
  return {"pack", {W, bias, Pk}, body};
}

std::vector<float> reference(const std::vector<float>& w, const std::vector<float>& bias, int n,
                             int k) {
  std::vector<float> p(static_cast<size_t>(k) * n);
  for (int a = 0; a < k; ++a)
    for (int v = 0; v < n; ++v)
      p[a * n + v] = w[v * k + a] * 0.5f + bias[v] - static_cast<float>(a);
  return p;
}

TEST(LlvmTransposedCopy, BlocksTransposedInRegistersMatchThePlainLoop) {
  // 48 x 64: whole blocks for 4, 8 and 16 lanes alike.
  const int n = 48, k = 64;
  auto p = pack_program(n, k, P::DType::f32());
  const std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("%transpose"), std::string::npos);
  EXPECT_EQ(ir.find("llvm.masked.gather"), std::string::npos);
  auto w = random_floats(n * k, 31), bias = random_floats(n, 32);
  std::vector<float> out(n * k, -1.f);
  run(p, {w.data(), bias.data(), out.data()});
  expect_close(out, reference(w, bias, n, k), 0, 0);
}

TEST(LlvmTransposedCopy, ExtentsThatDoNotDivideKeepTheLoop) {
  const int n = 20, k = 13;
  auto p = pack_program(n, k, P::DType::f32());
  EXPECT_EQ(emit_ir(p, {}, false).find("%transpose"), std::string::npos);
  auto w = random_floats(n * k, 33), bias = random_floats(n, 34);
  std::vector<float> out(n * k, -1.f);
  run(p, {w.data(), bias.data(), out.data()});
  expect_close(out, reference(w, bias, n, k), 0, 0);
}

TEST(LlvmTransposedCopy, ABf16DestinationIsRoundedAsTheLoopWouldRoundIt) {
  const int n = 32, k = 32;
  auto p = pack_program(n, k, P::DType::bf16());
  EXPECT_NE(emit_ir(p, {}, false).find("%transpose"), std::string::npos);
  auto w = random_floats(n * k, 35), bias = random_floats(n, 36);
  std::vector<uint16_t> out(n * k, 0);
  run(p, {w.data(), bias.data(), out.data()});
  const std::vector<float> want = reference(w, bias, n, k);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(out[i], float_to_bf16(want[i])) << "element " << i;
}

} // namespace
} // namespace mt::llvm_cpu::test
