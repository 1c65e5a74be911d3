// Element types other than f32: f16 and bf16 (stored 16-bit, computed in f32), int8 with i32
// accumulation, bool buffers, casts.
#include <gtest/gtest.h>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

TEST(LlvmDtype, HalfAndBFloat16LoadComputeStore) {
  // Y16[i] = f16(X16[i] * 1.5 + 1); Yb[i] = bf16(Xb[i] * 1.5 + 1); scalar and vectorized.
  for (bool vec : {false, true}) {
    const int n = 64;
    auto X16 = P::make_buffer("X16", P::DType::f16(), {n});
    auto Y16 = P::make_buffer("Y16", P::DType::f16(), {n});
    auto Xb = P::make_buffer("Xb", P::DType::bf16(), {n});
    auto Yb = P::make_buffer("Yb", P::DType::bf16(), {n});
    auto i = P::make_var("i");
    auto kind = vec ? P::ForKind::Vectorized : P::ForKind::Serial;
    auto body =
        P::make_for(i, n,
                    P::make_seq({P::make_store(Y16, {i}, P::make_load(X16, {i}) * 1.5 + 1.0),
                                 P::make_store(Yb, {i}, P::make_load(Xb, {i}) * 1.5 + 1.0)}),
                    kind);
    P::Program p{"half", {X16, Y16, Xb, Yb}, body};
    auto xf = random_floats(n, 40, -100.f, 100.f);
    std::vector<uint16_t> x16(n), y16(n), xb(n), yb(n);
    for (int k = 0; k < n; ++k) {
      x16[k] = float_to_half(xf[k]);
      xb[k] = float_to_bf16(xf[k]);
    }
    run(p, {x16.data(), y16.data(), xb.data(), yb.data()});
    for (int k = 0; k < n; ++k) {
      // Every operation rounds to the 16-bit type (as in core's interpreter).
      float h = half_to_float(float_to_half(half_to_float(x16[k]) * 1.5f));
      EXPECT_EQ(y16[k], float_to_half(h + 1.f)) << k;
      float bf = bf16_to_float(float_to_bf16(bf16_to_float(xb[k]) * 1.5f));
      EXPECT_EQ(yb[k], float_to_bf16(bf + 1.f)) << k;
    }
  }
}

TEST(LlvmDtype, Int8DotProductAccumulatesInInt32) {
  // C[i, j] = sum_k i32(A[i, k]) * i32(B[k, j]), j vectorized.
  const int n = 4, m = 32, kk = 64;
  auto A = P::make_buffer("A", P::DType::i8(), {n, kk});
  auto B = P::make_buffer("B", P::DType::i8(), {kk, m});
  auto C = P::make_buffer("C", P::DType::i32(), {n, m});
  auto i = P::make_var("i"), j = P::make_var("j"), k = P::make_var("k"), j0 = P::make_var("j0");
  auto i32 = [](P::Expr e) { return P::make_cast(P::DType::i32(), e); };
  auto body = P::make_for(
      i, n,
      P::make_seq({P::make_for(j0, m, P::make_store(C, {i, j0}, P::int_imm(0, P::DType::i32())),
                               P::ForKind::Vectorized),
                   P::make_for(k, kk,
                               P::make_for(j, m,
                                           P::make_store(C, {i, j},
                                                         P::make_load(C, {i, j}) +
                                                             i32(P::make_load(A, {i, k})) *
                                                                 i32(P::make_load(B, {k, j}))),
                                           P::ForKind::Vectorized))}));
  P::Program p{"dot_i8", {A, B, C}, body};
  std::mt19937 rng(41);
  std::vector<int8_t> a(n * kk), b(kk * m);
  for (auto& x : a)
    x = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  for (auto& x : b)
    x = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  std::vector<int32_t> c(n * m), want(n * m, 0);
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < kk; ++q)
      for (int s = 0; s < m; ++s)
        want[r * m + s] += a[r * kk + q] * b[q * m + s];
  run(p, {a.data(), b.data(), c.data()});
  EXPECT_EQ(c, want);
}

TEST(LlvmDtype, CastsBetweenKinds) {
  // F[i] = f32(i) / 4 - 3 ; I[i] = i32(F[i] * 3) (truncation) ; U[i] = u8(i * 37) ;
  // Q[i] = bool(I[i] % 2) ; H[i] = f16(F[i] / 3) back to f32 in G[i]
  const int n = 24;
  auto F = P::make_buffer("F", P::DType::f32(), {n});
  auto I = P::make_buffer("I", P::DType::i32(), {n});
  auto U = P::make_buffer("U", P::DType::u8(), {n});
  auto Q = P::make_buffer("Q", P::DType::boolean(), {n});
  auto G = P::make_buffer("G", P::DType::f32(), {n});
  for (bool vec : {false, true}) {
    auto i = P::make_var("i");
    auto f = P::make_cast(P::DType::f32(), i) / 4.0 - 3.0;
    auto iv = P::make_cast(P::DType::i32(), f * 3.0);
    auto body = P::make_for(
        i, n,
        P::make_seq(
            {P::make_store(F, {i}, f), P::make_store(I, {i}, iv),
             P::make_store(U, {i}, P::make_cast(P::DType::u8(), i * 37)),
             P::make_store(Q, {i}, P::make_cast(P::DType::boolean(), P::floormod(iv, 2))),
             P::make_store(G, {i},
                           P::make_cast(P::DType::f32(), P::make_cast(P::DType::f16(), f / 3.0)))}),
        vec ? P::ForKind::Vectorized : P::ForKind::Serial);
    P::Program p{"casts", {F, I, U, Q, G}, body};
    std::vector<float> fv(n), gv(n);
    std::vector<int32_t> iv2(n);
    std::vector<uint8_t> uv(n), qv(n);
    run(p, {fv.data(), iv2.data(), uv.data(), qv.data(), gv.data()});
    for (int k = 0; k < n; ++k) {
      float want_f = static_cast<float>(k) / 4.f - 3.f;
      EXPECT_EQ(fv[k], want_f);
      int32_t want_i = static_cast<int32_t>(want_f * 3.f);
      EXPECT_EQ(iv2[k], want_i);
      EXPECT_EQ(uv[k], static_cast<uint8_t>(k * 37));
      int m2 = ((want_i % 2) + 2) % 2;
      EXPECT_EQ(qv[k], m2 != 0 ? 1 : 0);
      EXPECT_EQ(gv[k], half_to_float(float_to_half(want_f / 3.f)));
    }
  }
}

} // namespace
} // namespace mt::llvm_cpu::test
