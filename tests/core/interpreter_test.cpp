// Tests of the reference interpreter (core/lower/interpreter.h) and NDArray
// (core/runtime/ndarray.h): per-dtype semantics, error reporting, argument checking.
#include "core/lower/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/lower/lower.h"
#include "core/runtime/ndarray.h"

namespace mt {
namespace {

Expr ld(const Buffer& b, std::vector<Expr> idx) {
  return make_load(b, std::move(idx));
}

// A lowered function: for i in [0, n): out[i] = value(i).
Function elementwise(const std::string& name, std::vector<Buffer> params, const Buffer& out,
                     const std::function<Expr(const Expr&)>& value, int64_t n) {
  Expr i = make_var("i");
  Function f;
  f.name = name;
  f.params = std::move(params);
  f.body = make_for(i, n, make_store(out, {i}, value(i)));
  f.lowered = true;
  return f;
}

// Round-to-nearest-even of a float to bf16, by integer manipulation of its bits (an
// implementation independent of the one under test).
float bf16_reference(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

int64_t floordiv_reference(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}

TEST(InterpreterDType, F32ArithmeticIsDoneInFloat) {
  // A long f32 accumulation differs from the double one; the interpreter must match float.
  const int64_t n = 1000;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer S = make_buffer("S", DType::f32(), {1});
  Expr k = make_var("k");
  Function f;
  f.name = "sum";
  f.params = {A, S};
  f.body = make_seq({make_store(S, {0}, float_imm(0.0)),
                     make_for(k, n, make_store(S, {0}, ld(S, {0}) + ld(A, {k}) * 1.1))});
  f.lowered = true;
  NDArray a(DType::f32(), {n}), s(DType::f32(), {1});
  a.fill_random(42, 0, 1000);
  interpret(f, {&a, &s});
  float want = 0;
  double want_double = 0;
  for (int64_t x = 0; x < n; ++x) {
    want += a.data_as<float>()[x] * static_cast<float>(1.1);
    want_double += a.data_as<float>()[x] * static_cast<float>(1.1);
  }
  EXPECT_EQ(s.data_as<float>()[0], want);
  EXPECT_NE(static_cast<double>(want), want_double); // the test would be vacuous otherwise
}

TEST(InterpreterDType, F16RoundingOnStoreAndArithmetic) {
  // Values chosen around f16 rounding boundaries: ties, subnormals, overflow.
  std::vector<float> in = {1.0f,          1.00048828125f, 1.000732421875f, 1.0014648f,
                           65504.0f,      65519.0f,       65520.0f,        6.0e-8f,
                           2.9802322e-8f, -3.14159f,      1e-3f,           0.1f};
  int64_t n = static_cast<int64_t>(in.size());
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer H = make_buffer("H", DType::f16(), {n});
  Buffer H2 = make_buffer("H2", DType::f16(), {n});
  Function to_half = elementwise(
      "to_half", {A, H}, H, [&](const Expr& i) { return make_cast(DType::f16(), ld(A, {i})); }, n);
  // f16 arithmetic: every operation rounds to f16.
  Function twice = elementwise(
      "twice", {H, H2}, H2,
      [&](const Expr& i) {
        return ld(H, {i}) * float_imm(3.0, DType::f16()) + float_imm(0.1, DType::f16());
      },
      n);
  NDArray a(DType::f32(), {n}), h(DType::f16(), {n}), h2(DType::f16(), {n});
  for (int64_t x = 0; x < n; ++x)
    a.data_as<float>()[x] = in[x];
  interpret(to_half, {&a, &h});
  interpret(twice, {&h, &h2});
#if defined(__FLT16_MAX__)
  for (int64_t x = 0; x < n; ++x) {
    _Float16 ref = static_cast<_Float16>(in[x]);
    EXPECT_EQ(std::memcmp(&ref, h.data_as<uint16_t>() + x, 2), 0) << "value " << in[x];
    EXPECT_EQ(h.get_double(x), static_cast<double>(ref)) << "value " << in[x];
    _Float16 three = static_cast<_Float16>(3.0), tenth = static_cast<_Float16>(0.1);
    _Float16 prod = static_cast<_Float16>(static_cast<float>(ref) * static_cast<float>(three));
    _Float16 ref2 = static_cast<_Float16>(static_cast<float>(prod) + static_cast<float>(tenth));
    EXPECT_EQ(h2.get_double(x), static_cast<double>(ref2)) << "value " << in[x];
  }
#endif
  // Hand-derived: ties to even, largest finite, overflow, smallest subnormal.
  EXPECT_EQ(h.get_double(1), 1.0);           // 1 + 2^-11 is a tie -> even (1.0)
  EXPECT_EQ(h.get_double(2), 1.0 + 0x1p-10); // 1 + 1.5 * 2^-10 -> 1 + 2^-10
  EXPECT_EQ(h.get_double(4), 65504.0);
  EXPECT_EQ(h.get_double(5), 65504.0);      // below the halfway point to 65536
  EXPECT_TRUE(std::isinf(h.get_double(6))); // the tie rounds to even = overflow
  EXPECT_EQ(h.get_double(7), 0x1p-24);      // 6e-8 is close to the smallest subnormal
  EXPECT_EQ(h.get_double(8), 0.0);          // 2^-25 is a tie between 0 and 2^-24 -> 0
}

TEST(InterpreterDType, BF16Rounding) {
  const int64_t n = 64;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer Bf = make_buffer("Bf", DType::bf16(), {n});
  Function f = elementwise(
      "to_bf16", {A, Bf}, Bf, [&](const Expr& i) { return make_cast(DType::bf16(), ld(A, {i})); },
      n);
  NDArray a(DType::f32(), {n}), b(DType::bf16(), {n});
  a.fill_random(17, -100, 100);
  a.data_as<float>()[0] = 1.00390625f; // 1 + 2^-8: tie -> 1.0
  a.data_as<float>()[1] = 1.01171875f; // 1 + 3 * 2^-8: tie -> 1 + 2^-6
  interpret(f, {&a, &b});
  for (int64_t x = 0; x < n; ++x)
    EXPECT_EQ(b.get_double(x), bf16_reference(a.data_as<float>()[x])) << "at " << x;
  EXPECT_EQ(b.get_double(0), 1.0);
  EXPECT_EQ(b.get_double(1), 1.015625);
}

TEST(InterpreterDType, IntegerWrapAround) {
  const int64_t n = 5;
  std::vector<int> xs = {100, -100, 127, -128, 55};
  std::vector<int> ys = {100, -100, 1, -1, 3};
  Buffer A = make_buffer("A", DType::i8(), {n});
  Buffer B = make_buffer("B", DType::i8(), {n});
  Buffer S = make_buffer("S", DType::i8(), {n});
  Buffer P = make_buffer("P", DType::i8(), {n});
  Buffer U = make_buffer("U", DType::u8(), {n});
  Expr i = make_var("i");
  Function f;
  f.name = "wrap";
  f.params = {A, B, S, P, U};
  f.body = make_for(
      i, n,
      make_seq(
          {make_store(S, {i}, ld(A, {i}) + ld(B, {i})), make_store(P, {i}, ld(A, {i}) * ld(B, {i})),
           make_store(U, {i},
                      make_cast(DType::u8(), ld(A, {i})) - make_cast(DType::u8(), ld(B, {i})))}));
  f.lowered = true;
  NDArray a(DType::i8(), {n}), b(DType::i8(), {n}), s(DType::i8(), {n}), p(DType::i8(), {n}),
      u(DType::u8(), {n});
  for (int64_t x = 0; x < n; ++x) {
    a.set_int(x, xs[x]);
    b.set_int(x, ys[x]);
  }
  interpret(f, {&a, &b, &s, &p, &u});
  for (int64_t x = 0; x < n; ++x) {
    EXPECT_EQ(s.get_int(x), static_cast<int8_t>(xs[x] + ys[x])) << x;
    EXPECT_EQ(p.get_int(x), static_cast<int8_t>(xs[x] * ys[x])) << x;
    EXPECT_EQ(u.get_int(x),
              static_cast<uint8_t>(static_cast<uint8_t>(xs[x]) - static_cast<uint8_t>(ys[x])))
        << x;
  }
  EXPECT_EQ(s.get_int(0), -56); // 200 wraps
}

TEST(InterpreterDType, FloorDivAndModOfNegatives) {
  std::vector<int> xs = {7, -7, 7, -7, 0, -1, 9};
  std::vector<int> ys = {2, 2, -2, -2, 3, 4, -4};
  int64_t n = static_cast<int64_t>(xs.size());
  Buffer A = make_buffer("A", DType::i32(), {n});
  Buffer B = make_buffer("B", DType::i32(), {n});
  Buffer Q = make_buffer("Q", DType::i32(), {n});
  Buffer R = make_buffer("R", DType::i32(), {n});
  Expr i = make_var("i");
  Function f;
  f.name = "floor";
  f.params = {A, B, Q, R};
  f.body = make_for(i, n,
                    make_seq({make_store(Q, {i}, floordiv(ld(A, {i}), ld(B, {i}))),
                              make_store(R, {i}, floormod(ld(A, {i}), ld(B, {i})))}));
  f.lowered = true;
  NDArray a(DType::i32(), {n}), b(DType::i32(), {n}), q(DType::i32(), {n}), r(DType::i32(), {n});
  for (int64_t x = 0; x < n; ++x) {
    a.set_int(x, xs[x]);
    b.set_int(x, ys[x]);
  }
  interpret(f, {&a, &b, &q, &r});
  for (int64_t x = 0; x < n; ++x) {
    int64_t want_q = floordiv_reference(xs[x], ys[x]);
    EXPECT_EQ(q.get_int(x), want_q) << xs[x] << " // " << ys[x];
    EXPECT_EQ(r.get_int(x), xs[x] - want_q * ys[x]) << xs[x] << " % " << ys[x];
  }

  b.set_int(3, 0);
  try {
    interpret(f, {&a, &b, &q, &r});
    FAIL() << "division by zero not reported";
  } catch (const InterpreterError& e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i = 3"), std::string::npos) << e.what();
  }
}

TEST(InterpreterDType, CastsBetweenKinds) {
  std::vector<float> in = {2.7f, -2.7f, 300.5f, -0.5f, 0.0f};
  int64_t n = static_cast<int64_t>(in.size());
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer I = make_buffer("I", DType::i32(), {n});
  Buffer Bo = make_buffer("Bo", DType::boolean(), {n});
  Buffer D = make_buffer("D", DType::f64(), {n});
  Expr i = make_var("i");
  Function f;
  f.name = "casts";
  f.params = {A, I, Bo, D};
  f.body = make_for(
      i, n,
      make_seq({make_store(I, {i}, make_cast(DType::i32(), ld(A, {i}))),
                make_store(Bo, {i}, make_cast(DType::boolean(), ld(A, {i}))),
                make_store(D, {i},
                           make_cast(DType::f64(), ld(I, {i})) / float_imm(4.0, DType::f64()))}));
  f.lowered = true;
  NDArray a(DType::f32(), {n}), ii(DType::i32(), {n}), bo(DType::boolean(), {n}),
      d(DType::f64(), {n});
  for (int64_t x = 0; x < n; ++x)
    a.data_as<float>()[x] = in[x];
  interpret(f, {&a, &ii, &bo, &d});
  for (int64_t x = 0; x < n; ++x) {
    EXPECT_EQ(ii.get_int(x), static_cast<int32_t>(in[x])) << in[x]; // truncation toward zero
    EXPECT_EQ(bo.get_int(x), in[x] != 0.0f) << in[x];
    EXPECT_EQ(d.get_double(x), static_cast<int32_t>(in[x]) / 4.0) << in[x];
  }
}

TEST(InterpreterSemantics, SelectAndAndAreLazy) {
  const int64_t n = 6;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Function f = elementwise(
      "shift", {A, C}, C,
      [&](const Expr& i) {
        Expr in_range = i + 1 < n;
        Expr guarded = make_select(in_range && ld(A, {min(i + 1, Expr(n - 1))}) > 0.0, 1.0, 0.0);
        return make_select(in_range, ld(A, {i + 1}), -1.0) + guarded;
      },
      n);
  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(3);
  interpret(f, {&a, &c});
  for (int64_t x = 0; x < n; ++x) {
    float want = x + 1 < n
                     ? a.data_as<float>()[x + 1] + (a.data_as<float>()[x + 1] > 0 ? 1.0f : 0.0f)
                     : -1.0f;
    EXPECT_EQ(c.data_as<float>()[x], want) << x;
  }
}

TEST(InterpreterSemantics, MathFunctionsInF32) {
  const int64_t n = 16;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Function f = elementwise(
      "math", {A, C}, C,
      [&](const Expr& i) {
        Expr x = ld(A, {i});
        return exp(x) + tanh(x) * sigmoid(x) + sqrt(abs(x)) + erf(x) - pow(abs(x), 1.5);
      },
      n);
  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(5, -3, 3);
  interpret(f, {&a, &c});
  for (int64_t k = 0; k < n; ++k) {
    float x = a.data_as<float>()[k];
    float sig = 1.0f / (1.0f + std::exp(-x));
    float want = std::exp(x) + std::tanh(x) * sig + std::sqrt(std::fabs(x)) + std::erf(x) -
                 std::pow(std::fabs(x), 1.5f);
    EXPECT_NEAR(c.data_as<float>()[k], want, 1e-5 * (1 + std::fabs(want))) << x;
  }
}

TEST(InterpreterErrors, OutOfBoundsStoreNamesBufferIndicesAndStatement) {
  const int64_t n = 4;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer Out = make_buffer("Out", DType::f32(), {n});
  Function f = elementwise(
      "oob_store", {A, Out}, Out, [&](const Expr& i) { return ld(A, {i}); }, n);
  // Rewrite the store index to i + 1.
  Expr i = as<ForNode>(f.body)->loop_var;
  f.body = make_for(i, n, make_store(Out, {i + 1}, ld(A, {i})));
  NDArray a(DType::f32(), {n}), out(DType::f32(), {n});
  a.fill(5.0);
  try {
    interpret(f, {&a, &out});
    FAIL() << "out-of-bounds store not reported";
  } catch (const InterpreterError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Out"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("store"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i = 3"), std::string::npos) << msg;
  }
  // Nothing past the buffer was touched and earlier iterations did run.
  EXPECT_EQ(out.get_double(3), 5.0);
}

TEST(InterpreterErrors, OutOfBoundsLoadIn2D) {
  Buffer A = make_buffer("Weights", DType::f32(), {3, 4});
  Buffer C = make_buffer("C", DType::f32(), {3, 4});
  Expr i = make_var("i"), j = make_var("j");
  Function f;
  f.name = "oob_load";
  f.params = {A, C};
  f.body = make_for(i, 3, make_for(j, 4, make_store(C, {i, j}, ld(A, {j, i}))));
  f.lowered = true;
  NDArray a(DType::f32(), {3, 4}), c(DType::f32(), {3, 4});
  try {
    interpret(f, {&a, &c});
    FAIL() << "out-of-bounds load not reported";
  } catch (const InterpreterError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("load"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Weights"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 0]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg; // the shape
  }
}

TEST(InterpreterErrors, ArgumentChecking) {
  Buffer A = make_buffer("A", DType::f32(), {4});
  Buffer C = make_buffer("C", DType::f32(), {4});
  Function f = elementwise(
      "copy", {A, C}, C, [&](const Expr& i) { return ld(A, {i}); }, 4);
  NDArray a(DType::f32(), {4}), c(DType::f32(), {4}), bad_shape(DType::f32(), {5}),
      bad_type(DType::f16(), {4});
  auto message = [&](const std::vector<NDArray*>& args) {
    try {
      interpret(f, args);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({&a}).find("expected 2 arguments"), std::string::npos) << message({&a});
  EXPECT_NE(message({&a, &bad_shape}).find("(C) has shape [5], expected [4]"), std::string::npos)
      << message({&a, &bad_shape});
  EXPECT_NE(message({&bad_type, &c}).find("(A) has dtype f16, expected f32"), std::string::npos)
      << message({&bad_type, &c});
  EXPECT_NE(message({&a, nullptr}).find("null"), std::string::npos);
  EXPECT_EQ(message({&a, &c}), "no error");
}

TEST(InterpreterErrors, BlocksAndUnboundVariablesAreRejected) {
  Buffer C = make_buffer("C", DType::f32(), {4});
  Expr i = make_var("i"), stray = make_var("stray");
  Function f;
  f.name = "unbound";
  f.params = {C};
  f.body = make_for(i, 4, make_store(C, {stray}, float_imm(1.0)));
  f.lowered = true;
  NDArray c(DType::f32(), {4});
  try {
    interpret(f, {&c});
    FAIL() << "unbound variable not reported";
  } catch (const InterpreterError& e) {
    EXPECT_NE(std::string(e.what()).find("stray"), std::string::npos) << e.what();
  }
}

TEST(InterpreterRuntime, CompiledProgramRunsRepeatedlyAndIsFast) {
  const int64_t n = 64;
  Buffer A = make_buffer("A", DType::f32(), {n, n});
  Buffer B = make_buffer("B", DType::f32(), {n, n});
  Buffer C = make_buffer("C", DType::f32(), {n, n});
  Expr i = make_var("i"), j = make_var("j"), k = make_var("k");
  Function f;
  f.name = "mm";
  f.params = {A, B, C};
  f.body = make_for(
      i, n,
      make_for(j, n,
               make_seq({make_store(C, {i, j}, float_imm(0.0)),
                         make_for(k, n,
                                  make_store(C, {i, j},
                                             ld(C, {i, j}) + ld(A, {i, k}) * ld(B, {k, j})))})),
      ForKind::Parallel);
  f.lowered = true;
  CompiledProgram prog(f);
  NDArray a(DType::f32(), {n, n}), b(DType::f32(), {n, n}), c(DType::f32(), {n, n});
  for (int rep = 0; rep < 3; ++rep) {
    a.fill_random(rep);
    b.fill_random(rep + 100);
    prog.run({&a, &b, &c});
    for (int64_t x = 0; x < n; x += 7)
      for (int64_t y = 0; y < n; y += 5) {
        float acc = 0;
        for (int64_t z = 0; z < n; ++z)
          acc += a.data_as<float>()[x * n + z] * b.data_as<float>()[z * n + y];
        ASSERT_EQ(c.data_as<float>()[x * n + y], acc);
      }
  }
}

// ---- NDArray ---------------------------------------------------------------------------------

TEST(InterpreterNDArray, StorageViewsAndCopies) {
  NDArray a(DType::f32(), {3, 5});
  EXPECT_EQ(a.num_elements(), 15);
  EXPECT_EQ(a.nbytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(a.get_double(14), 0.0);
  std::vector<double> ext(4, 2.5);
  NDArray view(DType::f64(), {2, 2}, ext.data());
  EXPECT_FALSE(view.owns_data());
  view.set_double(3, -1.0);
  EXPECT_EQ(ext[3], -1.0);
  NDArray copy = view;
  EXPECT_TRUE(copy.owns_data());
  copy.set_double(0, 9.0);
  EXPECT_EQ(ext[0], 2.5);
  EXPECT_THROW(a.get_double(15), std::out_of_range);
}

TEST(InterpreterNDArray, FillRandomIsDeterministicAndInRange) {
  NDArray a(DType::f32(), {100}), b(DType::f32(), {100}), c(DType::f32(), {100});
  a.fill_random(7, -2, 3);
  b.fill_random(7, -2, 3);
  c.fill_random(8, -2, 3);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.nbytes()), 0);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE(a.get_double(i), -2.0);
    EXPECT_LE(a.get_double(i), 3.0);
  }
  NDArray q(DType::i8(), {200});
  q.fill_random(1);
  bool saw_neg = false;
  for (int64_t i = 0; i < 200; ++i) {
    EXPECT_LE(std::abs(q.get_int(i)), 1);
    saw_neg = saw_neg || q.get_int(i) < 0;
  }
  EXPECT_TRUE(saw_neg);
  NDArray h(DType::f16(), {50});
  h.fill_random(2);
  for (int64_t i = 0; i < 50; ++i)
    EXPECT_EQ(h.get_double(i), round_to_dtype(h.get_double(i), DType::f16()));
}

TEST(InterpreterNDArray, AllcloseReportsFirstMismatch) {
  NDArray a(DType::f32(), {2, 3}), b(DType::f32(), {2, 3});
  a.fill_random(1);
  b = a;
  std::string why;
  EXPECT_TRUE(allclose(a, b, 0, 0, &why));
  EXPECT_EQ(max_abs_diff(a, b), 0.0);
  b.set_double(4, a.get_double(4) + 0.5);
  EXPECT_FALSE(allclose(a, b, 1e-5, 1e-5, &why));
  EXPECT_NE(why.find("[1, 1]"), std::string::npos) << why;
  EXPECT_NEAR(max_abs_diff(a, b), 0.5, 1e-6);
  b.set_double(0, std::nan(""));
  EXPECT_FALSE(allclose(a, b, 1, 1, &why));
  EXPECT_NE(why.find("[0, 0]"), std::string::npos) << why;
  EXPECT_TRUE(std::isinf(max_abs_diff(a, b)));
  NDArray c(DType::f32(), {3, 2});
  EXPECT_FALSE(allclose(a, c, 1, 1, &why));
  EXPECT_NE(why.find("f32[2, 3]"), std::string::npos) << why;
}

TEST(InterpreterNDArray, HalfConversionsRoundTrip) {
  // Every finite f16 / bf16 bit pattern decodes and re-encodes to itself.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    double v = half_bits_to_double(h);
    if (!std::isnan(v)) {
      ASSERT_EQ(float_to_half_bits(v), h) << std::hex << bits;
    }
    double w = bf16_bits_to_double(h);
    if (!std::isnan(w)) {
      ASSERT_EQ(float_to_bf16_bits(w), h) << std::hex << bits;
    }
  }
  EXPECT_EQ(wrap_to_dtype(300, DType::u8()), 44);
  EXPECT_EQ(wrap_to_dtype(200, DType::i8()), -56);
  EXPECT_EQ(wrap_to_dtype(-1, DType{DTypeKind::UInt, 32}), 4294967295);
  EXPECT_EQ(round_to_dtype(3.9, DType::i32()), 3.0);
}

} // namespace
} // namespace mt
