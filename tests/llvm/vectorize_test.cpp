// Vectorized loops become explicit LLVM vector code: contiguous loads/stores, broadcasts,
// gathers/scatters, masked guards, chunking of long loops, and the reduction check.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

// C[i, j] = sum_k A[i, k] * B[k, j]: i parallel, k serial, j vectorized (width nj).
P::Program matmul_program(int n, int m, int kk, P::ForKind i_kind) {
  auto A = P::make_buffer("A", P::DType::f32(), {n, kk});
  auto B = P::make_buffer("B", P::DType::f32(), {kk, m});
  auto C = P::make_buffer("C", P::DType::f32(), {n, m});
  auto i = P::make_var("i"), j = P::make_var("j"), k = P::make_var("k"), j2 = P::make_var("j2");
  auto init = P::make_for(j2, m, P::make_store(C, {i, j2}, 0.0), P::ForKind::Vectorized);
  auto update =
      P::make_for(k, kk,
                  P::make_for(j, m,
                              P::make_store(C, {i, j},
                                            P::make_load(C, {i, j}) +
                                                P::make_load(A, {i, k}) * P::make_load(B, {k, j})),
                              P::ForKind::Vectorized));
  return {"matmul", {A, B, C}, P::make_for(i, n, P::make_seq({init, update}), i_kind)};
}

std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int n,
                                int m, int kk) {
  std::vector<float> c(static_cast<size_t>(n) * m, 0.f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < kk; ++k)
      for (int j = 0; j < m; ++j)
        c[i * m + j] += a[i * kk + k] * b[k * m + j];
  return c;
}

TEST(LlvmVectorize, MatmulVectorizedInnerParallelOuter) {
  const int n = 37, m = 16, kk = 29;
  auto p = matmul_program(n, m, kk, P::ForKind::Parallel);
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("load <16 x float>"), std::string::npos);
  EXPECT_NE(ir.find("store <16 x float>"), std::string::npos);
  EXPECT_NE(ir.find("matmul_par1"), std::string::npos); // outlined parallel body
  auto a = random_floats(n * kk, 10), b = random_floats(kk * m, 11);
  std::vector<float> c(n * m, -7.f);
  run(p, {a.data(), b.data(), c.data()});
  expect_close(c, naive_matmul(a, b, n, m, kk), 1e-5, 1e-5);
}

TEST(LlvmVectorize, LongVectorLoopIsChunkedWithATail) {
  // Width 100 > 64 lanes: one 64-lane chunk and a 36-lane tail.
  const int n = 3, m = 100, kk = 5;
  auto p = matmul_program(n, m, kk, P::ForKind::Serial);
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("<64 x float>"), std::string::npos);
  EXPECT_NE(ir.find("<36 x float>"), std::string::npos);
  auto a = random_floats(n * kk, 12), b = random_floats(kk * m, 13);
  std::vector<float> c(n * m);
  run(p, {a.data(), b.data(), c.data()});
  expect_close(c, naive_matmul(a, b, n, m, kk), 1e-5, 1e-5);
}

TEST(LlvmVectorize, StridedAndIndirectAccessesUseGatherAndScatter) {
  // Out[2*v + 1] = In[v, 3] (stride 8 gather, stride 2 scatter) + In[v // 2, v % 2] (non-affine)
  auto In = P::make_buffer("In", P::DType::f32(), {16, 8});
  auto Out = P::make_buffer("Out", P::DType::f32(), {33});
  auto v = P::make_var("v");
  auto body =
      P::make_for(v, 16,
                  P::make_store(Out, {v * 2 + 1},
                                P::make_load(In, {v, 3}) +
                                    P::make_load(In, {P::floordiv(v, 2), P::floormod(v, 2)})),
                  P::ForKind::Vectorized);
  P::Program p{"gather", {In, Out}, body};
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("llvm.masked.gather"), std::string::npos);
  EXPECT_NE(ir.find("llvm.masked.scatter"), std::string::npos);
  auto in = random_floats(128, 14);
  std::vector<float> out(33, 0.f), want(33, 0.f);
  for (int x = 0; x < 16; ++x)
    want[2 * x + 1] = in[x * 8 + 3] + in[(x / 2) * 8 + x % 2];
  run(p, {in.data(), out.data()});
  expect_close(out, want, 0, 0);
}

TEST(LlvmVectorize, BoundaryGuardBecomesMaskedCode) {
  // Split of 50 by 16 with a guard: for o in 4: for v in 16 (vectorized): if o*16+v < 50: ...
  auto A = P::make_buffer("A", P::DType::f32(), {50});
  auto B = P::make_buffer("B", P::DType::f32(), {50});
  auto o = P::make_var("o"), v = P::make_var("v");
  auto idx = o * 16 + v;
  auto body = P::make_for(
      o, 4,
      P::make_for(
          v, 16,
          P::make_if(idx < 50,
                     P::make_store(B, {idx}, P::make_load(A, {idx}) * P::make_load(A, {idx})),
                     nullptr),
          P::ForKind::Vectorized));
  P::Program p{"guard", {A, B}, body};
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("llvm.masked.load"), std::string::npos);
  EXPECT_NE(ir.find("llvm.masked.store"), std::string::npos);
  // B has room past its 50 declared elements: a store there by a lane the guard disables would
  // overwrite the sentinel 42.
  std::vector<float> a = random_floats(50, 15);
  std::vector<float> b(64, 42.f), want(64, 42.f);
  for (int x = 0; x < 50; ++x)
    want[x] = a[x] * a[x];
  run(p, {a.data(), b.data()});
  expect_close(b, want, 0, 0);
}

// A padded copy, B[r, x] = x in [5, 55) ? A[r, clamp(x - 5, 0, 49)] : 0, as a pad block (or a
// convolution with its padding inlined) reads its input: the clamp makes the index
// non-affine, yet inside the interior it is the identity. Vectors wholly inside load A
// contiguously (the lanes the select drops included: they are in bounds), the edges gather.
TEST(LlvmVectorize, ClampedIndexInsideTheInteriorIsAContiguousLoad) {
  const int rows = 3, n = 50, pad = 5, m = 64;
  auto A = P::make_buffer("A", P::DType::f32(), {rows, n});
  auto B = P::make_buffer("B", P::DType::f32(), {rows, m});
  auto r = P::make_var("r"), o = P::make_var("o"), v = P::make_var("v");
  auto x = o * 16 + v;
  auto value = P::make_select((x >= pad) && (x < pad + n),
                              P::make_load(A, {r, P::min(P::max(x - pad, 0), n - 1)}), 0.0);
  auto body = P::make_for(
      r, rows,
      P::make_for(o, m / 16,
                  P::make_for(v, 16, P::make_store(B, {r, x}, value), P::ForKind::Vectorized)));
  P::Program p{"padded", {A, B}, body};
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("clamp.inside"), std::string::npos);
  EXPECT_NE(ir.find("load <16 x float>"), std::string::npos) << "the interior's plain load";
  EXPECT_NE(ir.find("llvm.masked.gather"), std::string::npos) << "the edges' gather";
  std::vector<float> a = random_floats(rows * n, 21);
  std::vector<float> b(rows * m, 42.f), want(rows * m);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < m; ++j)
      want[i * m + j] = j >= pad && j < pad + n ? a[i * n + (j - pad)] : 0.f;
  run(p, {a.data(), b.data()});
  expect_close(b, want, 0, 0);
}

TEST(LlvmVectorize, ElseBranchAndVaryingSelect) {
  auto A = P::make_buffer("A", P::DType::f32(), {32});
  auto B = P::make_buffer("B", P::DType::f32(), {32});
  auto v = P::make_var("v");
  auto a = P::make_load(A, {v});
  auto body =
      P::make_for(v, 32,
                  P::make_if(a > 0.0, P::make_store(B, {v}, a * 10.0),
                             P::make_store(B, {v}, P::make_select(P::floormod(v, 2) < 1, a, -a))),
                  P::ForKind::Vectorized);
  P::Program p{"vif", {A, B}, body};
  auto av = random_floats(32, 16);
  std::vector<float> b(32), want(32);
  for (int x = 0; x < 32; ++x)
    want[x] = av[x] > 0 ? av[x] * 10 : (x % 2 < 1 ? av[x] : -av[x]);
  run(p, {av.data(), b.data()});
  expect_close(b, want, 0, 0);
}

TEST(LlvmVectorize, BroadcastOfUniformLoadAndLoopVariable) {
  // B[i, v] = A[i] * v + i
  auto A = P::make_buffer("A", P::DType::f32(), {5});
  auto B = P::make_buffer("B", P::DType::f32(), {5, 8});
  auto i = P::make_var("i"), v = P::make_var("v");
  auto body = P::make_for(
      i, 5,
      P::make_for(v, 8,
                  P::make_store(B, {i, v},
                                P::make_load(A, {i}) * P::make_cast(P::DType::f32(), v) +
                                    P::make_cast(P::DType::f32(), i)),
                  P::ForKind::Vectorized));
  P::Program p{"bcast", {A, B}, body};
  auto a = random_floats(5, 17);
  std::vector<float> b(40), want(40);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 8; ++c)
      want[r * 8 + c] = a[r] * c + r;
  run(p, {a.data(), b.data()});
  expect_close(b, want, 1e-6, 1e-6); // a*b+c may be fused into one FMA
}

TEST(LlvmVectorize, ReductionOverVectorLanesIsRejected) {
  // S[i] += A[i, v] with v vectorized: every lane updates the same S[i].
  auto A = P::make_buffer("A", P::DType::f32(), {4, 8});
  auto S = P::make_buffer("S", P::DType::f32(), {4});
  auto i = P::make_var("i"), v = P::make_var("v");
  auto body = P::make_for(
      i, 4,
      P::make_for(v, 8, P::make_store(S, {i}, P::make_load(S, {i}) + P::make_load(A, {i, v})),
                  P::ForKind::Vectorized));
  P::Program p{"bad_reduce", {A, S}, body};
  try {
    jit_compile(p);
    FAIL() << "expected CodegenError";
  } catch (const CodegenError& e) {
    EXPECT_NE(std::string(e.what()).find("reduction"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'S'"), std::string::npos) << e.what();
  }
}

TEST(LlvmVectorize, LoopCarriedDependenceFallsBackToSerial) {
  // A[v + 1] = A[v] * 2 (a prefix recurrence): vector code would read stale values.
  auto A = P::make_buffer("A", P::DType::f32(), {17});
  auto v = P::make_var("v");
  P::Program p{"recur",
               {A},
               P::make_for(v, 16, P::make_store(A, {v + 1}, P::make_load(A, {v}) * 2.0),
                           P::ForKind::Vectorized)};
  std::vector<float> a(17, 0.f), want(17);
  a[0] = want[0] = 1.f;
  for (int x = 1; x < 17; ++x)
    want[x] = want[x - 1] * 2;
  run(p, {a.data()});
  expect_close(a, want, 0, 0);
}

TEST(LlvmVectorize, InnerSerialLoopInsideVectorizedLoop) {
  // for v (vectorized): acc = 0 via C[v]; for k: C[v] += A[k, v] * k
  auto A = P::make_buffer("A", P::DType::f32(), {6, 24});
  auto C = P::make_buffer("C", P::DType::f32(), {24});
  auto v = P::make_var("v"), k = P::make_var("k");
  auto body = P::make_for(
      v, 24,
      P::make_seq({P::make_store(C, {v}, 0.0),
                   P::make_for(k, 6,
                               P::make_store(C, {v},
                                             P::make_load(C, {v}) +
                                                 P::make_load(A, {k, v}) *
                                                     P::make_cast(P::DType::f32(), k)))}),
      P::ForKind::Vectorized);
  P::Program p{"inner", {A, C}, body};
  EXPECT_TRUE(ir_contains(p, "<24 x float>"));
  auto a = random_floats(6 * 24, 18);
  std::vector<float> c(24), want(24, 0.f);
  for (int x = 0; x < 24; ++x)
    for (int kk = 0; kk < 6; ++kk)
      want[x] += a[kk * 24 + x] * kk;
  run(p, {a.data(), c.data()});
  expect_close(c, want, 1e-6, 1e-6);
}

TEST(LlvmVectorize, ConvWithPaddingGuardsVectorizedOverOutputChannels) {
  // out[oc, x] = sum_{ic, r} (0 <= x+r-1 < W ? in[ic, x+r-1] : 0) * w[r, ic, oc],
  // vectorized over oc (16), x serial with an If guard inside the reduction.
  const int W = 10, IC = 3, OC = 16, R = 3;
  auto In = P::make_buffer("In", P::DType::f32(), {IC, W});
  auto Wt = P::make_buffer("Wt", P::DType::f32(), {R, IC, OC});
  auto Out = P::make_buffer("Out", P::DType::f32(), {W, OC});
  auto x = P::make_var("x"), ic = P::make_var("ic"), r = P::make_var("r"), oc = P::make_var("oc"),
       oc2 = P::make_var("oc2");
  auto pos = x + r - 1;
  auto update =
      P::make_if(pos >= 0 && pos < W,
                 P::make_store(Out, {x, oc},
                               P::make_load(Out, {x, oc}) +
                                   P::make_load(In, {ic, pos}) * P::make_load(Wt, {r, ic, oc})));
  auto body = P::make_for(
      x, W,
      P::make_seq(
          {P::make_for(oc2, OC, P::make_store(Out, {x, oc2}, 0.0), P::ForKind::Vectorized),
           P::make_for(ic, IC,
                       P::make_for(r, R, P::make_for(oc, OC, update, P::ForKind::Vectorized)))}));
  P::Program p{"conv1d", {In, Wt, Out}, body};
  auto in = random_floats(IC * W, 19), w = random_floats(R * IC * OC, 20);
  std::vector<float> out(W * OC), want(W * OC, 0.f);
  for (int xx = 0; xx < W; ++xx)
    for (int c = 0; c < IC; ++c)
      for (int rr = 0; rr < R; ++rr) {
        int q = xx + rr - 1;
        if (q < 0 || q >= W) continue;
        for (int o = 0; o < OC; ++o)
          want[xx * OC + o] += in[c * W + q] * w[(rr * IC + c) * OC + o];
      }
  run(p, {in.data(), w.data(), out.data()});
  expect_close(out, want, 1e-5, 1e-5);
}

// Row reductions in a serial innermost loop, S[i] += X[i, k] and M[i] = max(M[i], X[i, k]):
// the combining operation may be reassociated, so LLVM keeps partial results in vector lanes
// (softmax's and layernorm's row sums and maxima). The results against double precision.
TEST(LlvmVectorize, SerialRowSumAndMaxBecomeVectorReductions) {
  const int rows = 5, n = 301;
  auto X = P::make_buffer("X", P::DType::f32(), {rows, n});
  auto S = P::make_buffer("S", P::DType::f32(), {rows});
  auto M = P::make_buffer("M", P::DType::f32(), {rows});
  auto i = P::make_var("i"), k = P::make_var("k"), k2 = P::make_var("k2");
  auto body = P::make_seq(
      {P::make_store(S, {i}, 0.0),
       P::make_for(k, n, P::make_store(S, {i}, P::make_load(S, {i}) + P::make_load(X, {i, k}))),
       P::make_store(M, {i}, -std::numeric_limits<double>::infinity()),
       P::make_for(k2, n,
                   P::make_store(M, {i}, P::max(P::make_load(M, {i}), P::make_load(X, {i, k2}))))});
  P::Program p{"rows", {X, S, M}, P::make_for(i, rows, body)};
  std::string ir = emit_ir(p);
  EXPECT_NE(ir.find("fadd reassoc"), std::string::npos) << ir;
  EXPECT_NE(ir.find("llvm.vector.reduce.fadd"), std::string::npos) << "sum not vectorised";
  EXPECT_NE(ir.find("llvm.vector.reduce.fmax"), std::string::npos) << "max not vectorised";
  std::vector<float> x = random_floats(rows * n, 21), sum(rows), mx(rows);
  for (int r = 0; r < rows; ++r)
    x[r * n + 17 * r] =
        40.0f + static_cast<float>(r); // a clear maximum, somewhere else in each row
  run(p, {x.data(), sum.data(), mx.data()});
  std::vector<float> want_sum(rows), want_max(rows);
  for (int r = 0; r < rows; ++r) {
    double acc = 0, best = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < n; ++c) {
      acc += x[r * n + c];
      best = std::max(best, static_cast<double>(x[r * n + c]));
    }
    want_sum[r] = static_cast<float>(acc);
    want_max[r] = static_cast<float>(best);
  }
  expect_close(sum, want_sum, 1e-5, 1e-5);
  EXPECT_EQ(mx, want_max); // a maximum is exact in any order
}

} // namespace
} // namespace mt::llvm_cpu::test

namespace mt::llvm_cpu::test {
namespace {

// y[n] = sum_k W[n, k] * x[k] with W in `wt`: a bf16 weight's vector loads also prefetch ahead
// (a decode step streams it from memory); an f32 one's do not. Both compute the same sums.
TEST(LlvmVectorize, AStreamedBf16WeightIsPrefetchedAhead) {
  const int n = 8, kk = 64;
  for (P::DType wt : {P::DType::bf16(), P::DType::f32()}) {
    auto W = P::make_buffer("W", wt, {n, kk});
    auto X = P::make_buffer("x", P::DType::f32(), {kk});
    auto Y = P::make_buffer("y", P::DType::f32(), {n, 16});
    auto i = P::make_var("i"), k = P::make_var("k"), l = P::make_var("l"), l2 = P::make_var("l2");
    auto init = P::make_for(l2, 16, P::make_store(Y, {i, l2}, 0.0), P::ForKind::Vectorized);
    auto w = P::make_load(W, {i, k * 16 + l});
    auto update = P::make_for(
        k, kk / 16,
        P::make_for(l, 16,
                    P::make_store(Y, {i, l},
                                  P::make_load(Y, {i, l}) + P::make_cast(P::DType::f32(), w) *
                                                                P::make_load(X, {k * 16 + l})),
                    P::ForKind::Vectorized));
    P::Program p{"matvec", {W, X, Y}, P::make_for(i, n, P::make_seq({init, update}))};
    const bool bf16 = wt == P::DType::bf16();
    EXPECT_EQ(emit_ir(p, {}, false).find("llvm.prefetch") != std::string::npos, bf16);
    std::vector<float> wf = random_floats(n * kk, 40), x = random_floats(kk, 41);
    std::vector<uint16_t> wb(wf.size());
    for (size_t e = 0; e < wf.size(); ++e) {
      wb[e] = float_to_bf16(wf[e]);
      if (bf16) wf[e] = bf16_to_float(wb[e]);
    }
    std::vector<float> y(n * 16, -1.f), want(n * 16, 0.f);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < kk; ++c)
        want[r * 16 + c % 16] += wf[r * kk + c] * x[c];
    run(p, {bf16 ? static_cast<void*>(wb.data()) : wf.data(), x.data(), y.data()});
    expect_close(y, want, 1e-5, 1e-5);
  }
}

} // namespace
} // namespace mt::llvm_cpu::test
