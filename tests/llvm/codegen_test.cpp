// Scalar code generation: loops, arithmetic, integer floor division, selects, ifs, unrolling,
// local buffers, errors.
#include <regex>

#include <gtest/gtest.h>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

TEST(LlvmCodegen, ElementwiseAddSerial) {
  auto A = P::make_buffer("A", P::DType::f32(), {7, 13});
  auto B = P::make_buffer("B", P::DType::f32(), {7, 13});
  auto C = P::make_buffer("C", P::DType::f32(), {7, 13});
  auto i = P::make_var("i"), j = P::make_var("j");
  auto body = P::make_for(
      i, 7,
      P::make_for(
          j, 13,
          P::make_store(C, {i, j}, P::make_load(A, {i, j}) * 2.0 + P::make_load(B, {i, j}))));
  P::Program p{"add", {A, B, C}, body};
  auto a = random_floats(91, 1), b = random_floats(91, 2);
  std::vector<float> c(91, 0.f), want(91);
  for (int k = 0; k < 91; ++k)
    want[k] = a[k] * 2.f + b[k];
  run(p, {a.data(), b.data(), c.data()});
  expect_close(c, want, 0, 0);
}

TEST(LlvmCodegen, FloorDivModMatchesMathematicalDefinition) {
  // out[i] = floordiv(i - 20, d[i]) and floormod(i - 20, d[i]) for divisors of both signs.
  auto D = P::make_buffer("D", P::DType::i32(), {40});
  auto Q = P::make_buffer("Q", P::DType::i32(), {40});
  auto R = P::make_buffer("R", P::DType::i32(), {40});
  auto Q7 = P::make_buffer("Q7", P::DType::i64(), {40});
  auto i = P::make_var("i");
  auto x = P::make_cast(P::DType::i32(), i - 20);
  auto d = P::make_load(D, {i});
  auto body = P::make_for(
      i, 40,
      P::make_seq({P::make_store(Q, {i}, P::floordiv(x, d)),
                   P::make_store(R, {i}, P::floormod(x, d)),
                   P::make_store(Q7, {i}, P::floordiv(i - 20, 7) * 100 + P::floormod(i - 20, 7))}));
  P::Program p{"divmod", {D, Q, R, Q7}, body};
  std::vector<int32_t> dv(40), q(40), r(40);
  std::vector<int64_t> q7(40);
  for (int k = 0; k < 40; ++k)
    dv[k] = (k % 2 ? 1 : -1) * (1 + k % 6);
  run(p, {dv.data(), q.data(), r.data(), q7.data()});
  for (int k = 0; k < 40; ++k) {
    int a = k - 20, b = dv[k];
    int fq = static_cast<int>(std::floor(static_cast<double>(a) / b));
    EXPECT_EQ(q[k], fq) << a << " // " << b;
    EXPECT_EQ(r[k], a - fq * b) << a << " % " << b;
    int64_t f7 = static_cast<int64_t>(std::floor((k - 20) / 7.0));
    EXPECT_EQ(q7[k], f7 * 100 + (k - 20 - f7 * 7));
  }
}

TEST(LlvmCodegen, MinMaxSelectIfAndCompare) {
  auto A = P::make_buffer("A", P::DType::f32(), {64});
  auto B = P::make_buffer("B", P::DType::f32(), {64});
  auto i = P::make_var("i");
  auto a = P::make_load(A, {i});
  // if (i % 3 == 0) B = max(a, 0) else B = select(a < 0.25, min(a, -0.5), a * a)
  auto body = P::make_for(
      i, 64,
      P::make_if(P::eq(P::floormod(i, 3), 0), P::make_store(B, {i}, P::max(a, 0.0)),
                 P::make_store(B, {i}, P::make_select(a < 0.25, P::min(a, -0.5), a * a))));
  P::Program p{"misc", {A, B}, body};
  auto av = random_floats(64, 3);
  std::vector<float> bv(64), want(64);
  for (int k = 0; k < 64; ++k) {
    float x = av[k];
    want[k] = k % 3 == 0 ? std::max(x, 0.f) : (x < 0.25f ? std::min(x, -0.5f) : x * x);
  }
  run(p, {av.data(), bv.data()});
  expect_close(bv, want, 0, 0);
}

TEST(LlvmCodegen, GuardedSelectDoesNotReadOutOfBounds) {
  // Padding: out[i] = i-2 in [0, n) ? in[i-2] : 0. The input is placed at the end of a page-
  // sized vector so a stray read past it would read the guard value 1e9 instead of faulting.
  const int n = 16;
  auto In = P::make_buffer("In", P::DType::f32(), {n});
  auto Out = P::make_buffer("Out", P::DType::f32(), {n + 4});
  auto i = P::make_var("i");
  auto h = i - 2;
  auto body = P::make_for(
      i, n + 4,
      P::make_store(Out, {i}, P::make_select(h >= 0 && h < n, P::make_load(In, {h}), 0.0)));
  P::Program p{"pad", {In, Out}, body};
  auto in = random_floats(n, 4);
  std::vector<float> out(n + 4), want(n + 4);
  for (int k = 0; k < n + 4; ++k)
    want[k] = (k - 2 >= 0 && k - 2 < n) ? in[k - 2] : 0.f;
  run(p, {in.data(), out.data()});
  expect_close(out, want, 0, 0);
}

TEST(LlvmCodegen, UnrolledLoopIsFullyUnrolled) {
  auto A = P::make_buffer("A", P::DType::f32(), {4, 8});
  auto B = P::make_buffer("B", P::DType::f32(), {4, 8});
  auto i = P::make_var("i"), j = P::make_var("j");
  auto body = P::make_for(
      i, 4,
      P::make_for(
          j, 8,
          P::make_store(B, {i, j}, P::make_load(A, {i, j}) + P::make_cast(P::DType::f32(), j)),
          P::ForKind::Unrolled));
  P::Program p{"unroll", {A, B}, body};
  CompileOptions o;
  o.opt_level = 0;
  // Unrolled in code generation, so the unoptimised IR already has no loop over j.
  std::string ir = emit_ir(p, o, false);
  EXPECT_EQ(ir.find("j.body"), std::string::npos);
  EXPECT_NE(ir.find("i.body"), std::string::npos);
  auto a = random_floats(32, 5);
  std::vector<float> b(32), want(32);
  for (int k = 0; k < 32; ++k)
    want[k] = a[k] + static_cast<float>(k % 8);
  run(p, {a.data(), b.data()}, o);
  expect_close(b, want, 0, 0);
}

// Code size bounds explicit unrolling: 512 stores of an erf (an inline polynomial each) stay a
// loop, 512 plain stores are expanded; both compute the same as written out here.
TEST(LlvmCodegen, UnrolledLoopTooLargeToExpandStaysALoop) {
  for (bool heavy : {true, false}) {
    SCOPED_TRACE(heavy ? "erf" : "add");
    auto A = P::make_buffer("A", P::DType::f32(), {512});
    auto B = P::make_buffer("B", P::DType::f32(), {512});
    auto j = P::make_var("j");
    P::Expr a = P::make_load(A, {j});
    P::Expr value = heavy ? P::call(P::MathFn::Erf, a) : a + 1.0;
    P::Program p{"big_unroll",
                 {A, B},
                 P::make_for(j, 512, P::make_store(B, {j}, value), P::ForKind::Unrolled)};
    std::string ir = emit_ir(p, {}, false);
    EXPECT_EQ(ir.find("j.body") != std::string::npos, heavy);
    auto av = random_floats(512, 9);
    std::vector<float> b(512), want(512);
    for (int k = 0; k < 512; ++k)
      want[k] = heavy ? std::erf(av[k]) : av[k] + 1.f;
    run(p, {av.data(), b.data()});
    expect_close(b, want, 1e-5, 1e-6);
  }
}

// A pad block as the convolutions' schedules leave it: 30 unrolled rows, each a vector of 58
// lanes reading the input through clamped indices (a gather at the edges). Each gather lane
// expands to scalar code, so the rows stay a loop (once 30 such rows took 14 s to compile);
// the same rows read contiguously are expanded. Both compute the padding as written out here.
TEST(LlvmCodegen, UnrolledRowsOfGathersStayALoop) {
  const int rows = 30, w = 56, pw = w + 2;
  for (bool clamped : {true, false}) {
    SCOPED_TRACE(clamped ? "clamped gather" : "contiguous");
    auto In = P::make_buffer("In", P::DType::f32(), {rows, pw});
    auto Out = P::make_buffer("Out", P::DType::f32(), {rows, pw});
    auto y = P::make_var("y"), x = P::make_var("x");
    P::Expr value;
    if (clamped) {
      P::Expr cx = P::min(P::max(x - 1, P::Expr(int64_t{0})), P::Expr(int64_t{w - 1}));
      value = P::make_select(x >= 1 && x < w + 1, P::make_load(In, {y, cx}), 0.0);
    } else {
      value = P::make_load(In, {y, x}) + 1.0;
    }
    P::Program p{
        "pad_rows",
        {In, Out},
        P::make_for(y, rows,
                    P::make_for(x, pw, P::make_store(Out, {y, x}, value), P::ForKind::Vectorized),
                    P::ForKind::Unrolled)};
    std::string ir = emit_ir(p, {}, false);
    EXPECT_EQ(ir.find("y.body") != std::string::npos, clamped);
    auto in = random_floats(static_cast<size_t>(rows * pw), 12);
    std::vector<float> out(static_cast<size_t>(rows * pw)), want(out.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < pw; ++c)
        want[static_cast<size_t>(r * pw + c)] =
            !clamped ? in[static_cast<size_t>(r * pw + c)] + 1.f
                     : (c >= 1 && c < w + 1 ? in[static_cast<size_t>(r * pw + c - 1)] : 0.f);
    run(p, {in.data(), out.data()});
    expect_close(out, want, 0, 0);
  }
}

// Softmax's last step, out[i, j] = x[i, j] / s[i], vectorized over j: the division by the row's
// value becomes a multiply by its reciprocal, computed once per row (no vector fdiv is left in
// the optimized code), within an ulp or two of the division written out here in double.
TEST(LlvmCodegen, DivisionByARowValueIsAReciprocalMultiply) {
  const int rows = 5, n = 64;
  auto X = P::make_buffer("X", P::DType::f32(), {rows, n});
  auto S = P::make_buffer("S", P::DType::f32(), {rows});
  auto Out = P::make_buffer("Out", P::DType::f32(), {rows, n});
  auto i = P::make_var("i"), j = P::make_var("j");
  P::Program p{
      "row_div",
      {X, S, Out},
      P::make_for(
          i, rows,
          P::make_for(j, n,
                      P::make_store(Out, {i, j}, P::make_load(X, {i, j}) / P::make_load(S, {i})),
                      P::ForKind::Vectorized))};
  std::string ir = emit_ir(p, {}, true);
  EXPECT_FALSE(std::regex_search(ir, std::regex("fdiv[a-z ]* <"))) << "a vector division is left";
  auto x = random_floats(static_cast<size_t>(rows * n), 21);
  auto s = random_floats(static_cast<size_t>(rows), 22, 0.5f, 3.f);
  std::vector<float> out(x.size()), want(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)
      want[static_cast<size_t>(r * n + c)] = static_cast<float>(
          static_cast<double>(x[static_cast<size_t>(r * n + c)]) / s[static_cast<size_t>(r)]);
  run(p, {x.data(), s.data(), out.data()});
  expect_close(out, want, 3e-7, 0);
}

TEST(LlvmCodegen, RowSumWithLocalAccumulator) {
  // allocate acc[1] (stack); for i: acc = 0; for k: acc += A[i,k]; S[i] = acc
  auto A = P::make_buffer("A", P::DType::f32(), {9, 33});
  auto S = P::make_buffer("S", P::DType::f32(), {9});
  auto acc = P::make_buffer("acc", P::DType::f32(), {1}, "local");
  auto i = P::make_var("i"), k = P::make_var("k");
  auto body = P::make_for(
      i, 9,
      P::make_allocate(acc, P::make_seq({P::make_store(acc, {0}, 0.0),
                                         P::make_for(k, 33,
                                                     P::make_store(acc, {0},
                                                                   P::make_load(acc, {0}) +
                                                                       P::make_load(A, {i, k}))),
                                         P::make_store(S, {i}, P::make_load(acc, {0}))})));
  P::Program p{"rowsum", {A, S}, body};
  auto a = random_floats(9 * 33, 6);
  std::vector<float> s(9), want(9, 0.f);
  for (int r = 0; r < 9; ++r)
    for (int c = 0; c < 33; ++c)
      want[r] += a[r * 33 + c];
  run(p, {a.data(), s.data()});
  expect_close(s, want, 1e-6, 1e-6);
}

// A short serial loop that only adds into one location (the combination of vector-lane
// partial sums) is one vector of terms and a vector reduction, not a chain of scalar adds;
// the sums are those of a double-precision reference. A loop whose terms read the location
// it writes, or whose length is not a power of two, stays a loop.
TEST(LlvmCodegen, ShortSumIntoOneLocationIsAVectorReduction) {
  const int rows = 6, n = 16;
  auto A = P::make_buffer("A", P::DType::f32(), {rows, n});
  auto B = P::make_buffer("B", P::DType::f32(), {n});
  auto S = P::make_buffer("S", P::DType::f32(), {rows});
  auto i = P::make_var("i"), k = P::make_var("k");
  auto sum_of = [&](int64_t extent, P::Expr term) {
    return P::make_for(
        i, rows,
        P::make_seq({P::make_store(S, {i}, 1.0),
                     P::make_for(k, extent, P::make_store(S, {i}, P::make_load(S, {i}) + term))}));
  };
  P::Program p{"short_sum", {A, B, S}, sum_of(n, P::make_load(A, {i, k}) * P::make_load(B, {k}))};
  // What the generator emits, before LLVM's passes (which may form reductions of their own).
  auto emits_reduction = [](const P::Program& q) {
    return emit_ir(q, {}, false).find("vector.reduce.fadd") != std::string::npos;
  };
  EXPECT_TRUE(emits_reduction(p));
  auto a = random_floats(static_cast<size_t>(rows * n), 31);
  auto b = random_floats(static_cast<size_t>(n), 32);
  std::vector<float> s(rows), want(rows);
  for (int r = 0; r < rows; ++r) {
    double acc = 1.0;
    for (int c = 0; c < n; ++c)
      acc += static_cast<double>(a[static_cast<size_t>(r * n + c)]) * b[static_cast<size_t>(c)];
    want[static_cast<size_t>(r)] = static_cast<float>(acc);
  }
  run(p, {a.data(), b.data(), s.data()});
  expect_close(s, want, 1e-6, 1e-6);

  P::Program odd{"odd_sum", {A, B, S}, sum_of(12, P::make_load(A, {i, k}))};
  EXPECT_FALSE(emits_reduction(odd));
  P::Program self{"self_sum", {A, B, S}, sum_of(8, P::make_load(S, {i}) * 0.5)};
  EXPECT_FALSE(emits_reduction(self));
  std::vector<float> s2(rows);
  run(self, {a.data(), b.data(), s2.data()});
  for (float x : s2)
    EXPECT_FLOAT_EQ(x, 1.f * 1.5f * 1.5f * 1.5f * 1.5f * 1.5f * 1.5f * 1.5f * 1.5f);
}

TEST(LlvmCodegen, LargeLocalBufferComesFromTheHeap) {
  // A 1 MiB local tile (over the stack limit) used as a transposed copy.
  const int n = 512;
  auto A = P::make_buffer("A", P::DType::f32(), {n, n});
  auto B = P::make_buffer("B", P::DType::f32(), {n, n});
  auto T = P::make_buffer("T", P::DType::f32(), {n, n}, "local");
  auto i = P::make_var("i"), j = P::make_var("j"), i2 = P::make_var("i2"), j2 = P::make_var("j2");
  auto body = P::make_allocate(
      T,
      P::make_seq(
          {P::make_for(i, n, P::make_for(j, n, P::make_store(T, {j, i}, P::make_load(A, {i, j})))),
           P::make_for(
               i2, n,
               P::make_for(j2, n, P::make_store(B, {i2, j2}, P::make_load(T, {i2, j2}) + 1.0)))}));
  P::Program p{"heap_tile", {A, B}, body};
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("aligned_alloc"), std::string::npos);
  EXPECT_NE(ir.find("@free"), std::string::npos);
  auto a = random_floats(n * n, 7);
  std::vector<float> b(n * n), want(n * n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      want[r * n + c] = a[c * n + r] + 1.f;
  run(p, {a.data(), b.data()});
  expect_close(b, want, 0, 0);
}

TEST(LlvmCodegen, SmallLocalBufferIsA64ByteAlignedAlloca) {
  auto A = P::make_buffer("A", P::DType::f32(), {16});
  auto T = P::make_buffer("tile", P::DType::f32(), {16}, "local");
  auto i = P::make_var("i");
  auto body = P::make_allocate(
      T,
      P::make_seq({P::make_for(i, 16, P::make_store(T, {i}, P::make_load(A, {i}) * 3.0)),
                   P::make_for(P::make_var("j"), 1, P::make_store(A, {0}, P::make_load(T, {5})))}));
  P::Program p{"stack_tile", {A}, body};
  std::string ir = emit_ir(p, {}, false);
  EXPECT_NE(ir.find("alloca [64 x i8], align 64"), std::string::npos) << ir;
}

TEST(LlvmCodegen, RejectsUnknownBuffersAndVariables) {
  auto A = P::make_buffer("A", P::DType::f32(), {4});
  auto stray = P::make_buffer("stray", P::DType::f32(), {4});
  auto i = P::make_var("i");
  P::Program p1{
      "bad_buffer", {A}, P::make_for(i, 4, P::make_store(A, {i}, P::make_load(stray, {i})))};
  EXPECT_THROW(jit_compile(p1), CodegenError);
  auto unbound = P::make_var("u");
  P::Program p2{"bad_var", {A}, P::make_store(A, {unbound}, 1.0)};
  try {
    jit_compile(p2);
    FAIL() << "expected CodegenError";
  } catch (const CodegenError& e) {
    EXPECT_NE(std::string(e.what()).find("'u'"), std::string::npos) << e.what();
  }
}

TEST(LlvmCodegen, NullRuntimeRunsParallelLoopsSerially) {
  auto A = P::make_buffer("A", P::DType::i32(), {100});
  auto i = P::make_var("i");
  P::Program p{"par_null_rt",
               {A},
               P::make_for(i, 100, P::make_store(A, {i}, P::make_cast(P::DType::i32(), i * i)),
                           P::ForKind::Parallel)};
  auto k = jit_compile(p);
  std::vector<int32_t> a(100, -1);
  void* args[] = {a.data()};
  ASSERT_EQ(k->call(args, nullptr), 0);
  for (int x = 0; x < 100; ++x)
    EXPECT_EQ(a[x], x * x);
}

} // namespace
} // namespace mt::llvm_cpu::test
