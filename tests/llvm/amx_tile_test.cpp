// AMX tile products (plugins/llvm_cpu/src/amx_tile.h): a matmul tiled by hand into nests marked
// "amx.bf16", compiled with -fpmath=bf16's bf16 products, against a float64 reference of the
// same products with A and B rounded to bf16 -- and, as written, against the unrounded one.
// Operands in f32 and bf16, B as a dense layer's weight [N, K], tiles smaller than the
// instruction's 16 x 16 x 32, and the schedule's packed copies laid out for the tile. The runs
// need a CPU with AMX-BF16 (skipped elsewhere); the generated code is checked on any x86 host.
#include <gtest/gtest.h>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

constexpr const char* kAmxTarget = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=sapphirerapids";

struct Case {
  int m, n, k;    // the matmul
  int tm, tn, tk; // the marked tile
  bool a_bf16 = false;
  bool b_weight = false; // B given as W[N, K]
  bool packed = false;   // the tile reads copies made under the k0 loop
};

P::Expr f32_of(const P::Expr& load) {
  return load->dtype == P::DType::f32() ? load : P::make_cast(P::DType::f32(), load);
}

// C = A x B: C zeroed, then for i0, j0, k0: the marked nest over one tile (i1, j1, k1).
P::Program tiled_matmul(const Case& c) {
  auto A = P::make_buffer("A", c.a_bf16 ? P::DType::bf16() : P::DType::f32(), {c.m, c.k});
  auto B =
      P::make_buffer("B", P::DType::f32(),
                     c.b_weight ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n});
  auto C = P::make_buffer("C", P::DType::f32(), {c.m, c.n});
  auto i = P::make_var("i"), j = P::make_var("j");
  auto i0 = P::make_var("i0"), j0 = P::make_var("j0"), k0 = P::make_var("k0");
  auto i1 = P::make_var("i1"), j1 = P::make_var("j1"), k1 = P::make_var("k1");
  auto x = P::make_var("x"), y = P::make_var("y"), u = P::make_var("u"), w = P::make_var("w");
  P::Expr row = i0 * c.tm + i1, col = j0 * c.tn + j1, depth = k0 * c.tk + k1;
  auto a_at = [&](const P::Expr& r, const P::Expr& d) { return P::make_load(A, {r, d}); };
  auto b_at = [&](const P::Expr& d, const P::Expr& cc) {
    return c.b_weight ? P::make_load(B, {cc, d}) : P::make_load(B, {d, cc});
  };
  P::Expr a_val = f32_of(a_at(row, depth)), b_val = f32_of(b_at(depth, col));
  std::vector<P::Stmt> per_k;
  P::Buffer As, Bs;
  if (c.packed) {
    As = P::make_buffer("A_s", P::DType::f32(), {c.tm, c.tk}, "global");
    Bs = P::make_buffer("B_s", P::DType::f32(), {c.tk, c.tn}, "global");
    per_k.push_back(P::make_for(
        x, c.tm,
        P::make_for(y, c.tk, P::make_store(As, {x, y}, f32_of(a_at(i0 * c.tm + x, k0 * c.tk + y))),
                    P::ForKind::Vectorized)));
    per_k.push_back(P::make_for(
        u, c.tk,
        P::make_for(w, c.tn, P::make_store(Bs, {u, w}, b_at(k0 * c.tk + u, j0 * c.tn + w)),
                    P::ForKind::Vectorized)));
    a_val = P::make_load(As, {i1, k1});
    b_val = P::make_load(Bs, {k1, j1});
  }
  P::Stmt update = P::make_store(C, {row, col}, P::make_load(C, {row, col}) + a_val * b_val);
  P::Stmt tile = P::make_for(
      i1, c.tm, P::make_for(j1, c.tn, P::make_for(k1, c.tk, update)), P::ForKind::Serial,
      P::Annotations{{P::kTensorIntrinsicAnnotation, std::string("amx.bf16")}});
  per_k.push_back(tile);
  P::Stmt body = P::make_seq(per_k);
  if (c.packed) body = P::make_allocate(As, P::make_allocate(Bs, body));
  P::Stmt tiles =
      P::make_for(i0, c.m / c.tm, P::make_for(j0, c.n / c.tn, P::make_for(k0, c.k / c.tk, body)));
  P::Stmt zero = P::make_for(
      i, c.m, P::make_for(j, c.n, P::make_store(C, {i, j}, 0.0), P::ForKind::Vectorized));
  return {"amx_matmul", {A, B, C}, P::make_seq({zero, tiles})};
}

float round_bf16(float v) {
  return bf16_to_float(float_to_bf16(v));
}

struct Inputs {
  std::vector<float> a, b;   // as given to the kernel (f32 values)
  std::vector<uint16_t> a16; // A in bf16, where the case takes it so
};

Inputs inputs(const Case& c) {
  Inputs in{random_floats(static_cast<size_t>(c.m) * c.k, 7),
            random_floats(static_cast<size_t>(c.k) * c.n, 8),
            {}};
  if (c.a_bf16) {
    in.a16.resize(in.a.size());
    for (size_t e = 0; e < in.a.size(); ++e) {
      in.a16[e] = float_to_bf16(in.a[e]);
      in.a[e] = bf16_to_float(in.a16[e]);
    }
  }
  return in;
}

// Sum over k of A[i, k] * B[k, j] in float64, the operands rounded to bf16 first or not.
std::vector<float> reference(const Case& c, const Inputs& in, bool rounded) {
  std::vector<float> out(static_cast<size_t>(c.m) * c.n);
  auto r = [&](float v) { return rounded ? round_bf16(v) : v; };
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double s = 0;
      for (int k = 0; k < c.k; ++k) {
        const float b = c.b_weight ? in.b[static_cast<size_t>(j) * c.k + k]
                                   : in.b[static_cast<size_t>(k) * c.n + j];
        s += static_cast<double>(r(in.a[static_cast<size_t>(i) * c.k + k])) * r(b);
      }
      out[static_cast<size_t>(i) * c.n + j] = static_cast<float>(s);
    }
  return out;
}

std::vector<float> run_case(const Case& c, const Inputs& in, bool bf16_products) {
  std::vector<float> out(static_cast<size_t>(c.m) * c.n, -1.f);
  CompileOptions o;
  o.bf16_products = bf16_products;
  std::vector<float> a = in.a, b = in.b;
  std::vector<uint16_t> a16 = in.a16;
  run(tiled_matmul(c), {c.a_bf16 ? static_cast<void*>(a16.data()) : a.data(), b.data(), out.data()},
      o);
  return out;
}

bool host_has_amx() {
  const Target t = host_target();
  return t.has("amx-tile") && t.has("amx-bf16");
}

class AmxTileProduct : public ::testing::TestWithParam<Case> {};

TEST_P(AmxTileProduct, MatchesTheBf16RoundedReference) {
  const Case& c = GetParam();
  CompileOptions o;
  o.target = kAmxTarget;
  o.bf16_products = true;
  const std::string ir = emit_ir(tiled_matmul(c), o);
  EXPECT_NE(ir.find("tdpbf16ps"), std::string::npos);
  // Packed copies are laid out for the tile where they are made: no tile goes through the stack.
  EXPECT_EQ(ir.find("%amx.a.stack") != std::string::npos, !c.packed && !c.a_bf16);
  EXPECT_EQ(ir.find("%amx.b.stack") != std::string::npos, !c.packed);
  // A packed weight [N, K] whose panel holds whole 32 x 16 blocks is transposed in registers,
  // 16 pairs at a time (the pair copy), not gathered.
  if (c.packed && c.b_weight && c.tk % 32 == 0 && c.tn % 16 == 0) {
    EXPECT_NE(ir.find("transpose"), std::string::npos);
  }
  o.bf16_products = false;
  EXPECT_EQ(emit_ir(tiled_matmul(c), o).find("tdpbf16ps"), std::string::npos);

  const Inputs in = inputs(c);
  // Without bf16 products the marked nest runs as written, in f32.
  expect_close(run_case(c, in, false), reference(c, in, false), 1e-5, 1e-5);
  if (!host_has_amx()) GTEST_SKIP() << "this CPU has no AMX-BF16: the tile product is not run";
  const std::vector<float> got = run_case(c, in, true);
  expect_close(got, reference(c, in, true), 1e-5, 1e-5);
  // And it is the rounded product that ran: the unrounded reference is further away.
  double off = 0;
  const std::vector<float> exact = reference(c, in, false);
  for (size_t e = 0; e < got.size(); ++e)
    off = std::max(off, std::fabs(static_cast<double>(got[e]) - exact[e]));
  EXPECT_GT(off, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Layouts, AmxTileProduct,
                         ::testing::Values(Case{32, 32, 64, 16, 16, 32},
                                           Case{48, 24, 40, 16, 12, 20},
                                           Case{26, 22, 36, 13, 11, 18, true},
                                           Case{32, 32, 64, 16, 16, 32, false, true},
                                           Case{32, 48, 64, 16, 16, 32, true, true},
                                           Case{32, 32, 64, 16, 16, 32, false, false, true},
                                           Case{48, 24, 40, 16, 12, 20, true, true, true},
                                           Case{32, 32, 64, 16, 16, 32, false, true, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return "m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" +
                                  std::to_string(c.k) + "_tile" + std::to_string(c.tm) + "x" +
                                  std::to_string(c.tn) + "x" + std::to_string(c.tk) +
                                  (c.a_bf16 ? "_aBf16" : "") + (c.b_weight ? "_bWeight" : "") +
                                  (c.packed ? "_packed" : "");
                         });

// The structure of a fast kernel (match_amx_block): per (i0, j0) the A rows and the B panel
// copied whole, then for k0: for i2 < R: for j2 < S: one tile product -- the R x S accumulators
// kept in tile registers through k0.
P::Program blocked_matmul(int m, int n, int k, int rows, int cols, bool b_weight,
                          bool split_copy = false) {
  auto A = P::make_buffer("A", P::DType::f32(), {m, k});
  auto B = P::make_buffer("B", P::DType::f32(),
                          b_weight ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
  auto C = P::make_buffer("C", P::DType::f32(), {m, n});
  const int bm = rows * 16, bn = cols * 16;
  auto As = P::make_buffer("A_s", P::DType::f32(), {bm, k});
  auto Bs = P::make_buffer("B_s", P::DType::f32(), {k, bn});
  auto i = P::make_var("i"), j = P::make_var("j"), i0 = P::make_var("i0"), j0 = P::make_var("j0");
  auto k0 = P::make_var("k0"), i2 = P::make_var("i2"), j2 = P::make_var("j2");
  auto i1 = P::make_var("i1"), j1 = P::make_var("j1"), k1 = P::make_var("k1");
  auto x = P::make_var("x"), y = P::make_var("y");
  P::Stmt copy_a =
      P::make_for(x, bm,
                  P::make_for(y, k, P::make_store(As, {x, y}, P::make_load(A, {i0 * bm + x, y})),
                              P::ForKind::Vectorized));
  auto u = P::make_var("u"), w = P::make_var("w");
  P::Expr b_val = b_weight ? P::make_load(B, {j0 * bn + w, u}) : P::make_load(B, {u, j0 * bn + w});
  P::Stmt copy_b = P::make_for(
      u, k, P::make_for(w, bn, P::make_store(Bs, {u, w}, b_val), P::ForKind::Vectorized));
  if (split_copy) { // the panel's columns in chunks of 16, as a split vectorized loop
    auto w0 = P::make_var("w0"), w1 = P::make_var("w1");
    P::Expr col = w0 * 16 + w1;
    P::Expr v =
        b_weight ? P::make_load(B, {j0 * bn + col, u}) : P::make_load(B, {u, j0 * bn + col});
    copy_b = P::make_for(
        u, k,
        P::make_for(w0, bn / 16,
                    P::make_for(w1, 16, P::make_store(Bs, {u, col}, v), P::ForKind::Vectorized)));
  }
  P::Expr row = i0 * bm + i2 * 16 + i1, col = j0 * bn + j2 * 16 + j1, d = k0 * 32 + k1;
  P::Stmt update =
      P::make_store(C, {row, col},
                    P::make_load(C, {row, col}) +
                        P::make_load(As, {i2 * 16 + i1, d}) * P::make_load(Bs, {d, j2 * 16 + j1}));
  P::Stmt tile =
      P::make_for(i1, 16, P::make_for(j1, 16, P::make_for(k1, 32, update)), P::ForKind::Serial,
                  P::Annotations{{P::kTensorIntrinsicAnnotation, std::string("amx.bf16")}});
  P::Stmt ks = P::make_for(k0, k / 32, P::make_for(i2, rows, P::make_for(j2, cols, tile)));
  P::Stmt body = P::make_allocate(As, P::make_allocate(Bs, P::make_seq({copy_a, copy_b, ks})));
  P::Stmt zero =
      P::make_for(i, m, P::make_for(j, n, P::make_store(C, {i, j}, 0.0), P::ForKind::Vectorized));
  return {"amx_block",
          {A, B, C},
          P::make_seq({zero, P::make_for(i0, m / bm, P::make_for(j0, n / bn, body))})};
}

TEST(AmxTile, BlocksOfProductsKeepTheirAccumulatorsInTileRegisters) {
  struct Block {
    int rows, cols;
    bool b_weight, split_copy;
  };
  for (const Block& blk :
       {Block{2, 2, true, false}, Block{1, 2, false, false}, Block{2, 1, true, false},
        Block{3, 1, false, false}, Block{2, 2, true, true}, Block{1, 2, false, true}}) {
    SCOPED_TRACE(std::to_string(blk.rows) + "x" + std::to_string(blk.cols) +
                 (blk.split_copy ? " split copy" : ""));
    const Case c{96, 64, 128, 16, 16, 32, false, blk.b_weight, true};
    P::Program p = blocked_matmul(c.m, c.n, c.k, blk.rows, blk.cols, blk.b_weight, blk.split_copy);
    CompileOptions o;
    o.target = kAmxTarget;
    o.bf16_products = true;
    const std::string ir = emit_ir(p, o, false);
    EXPECT_NE(ir.find("%amx.acc"), std::string::npos);
    // The panel is written a pair row at a time (no scatter into its pairs).
    EXPECT_NE(ir.find("pairs.cols"), std::string::npos);
    const Inputs in = inputs(c);
    std::vector<float> a = in.a, b = in.b, out(static_cast<size_t>(c.m) * c.n, -1.f);
    run(p, {a.data(), b.data(), out.data()}, CompileOptions{});
    expect_close(out, reference(c, in, false), 1e-5, 1e-5);
    if (!host_has_amx()) continue;
    o.target.clear();
    std::fill(out.begin(), out.end(), -1.f);
    run(p, {a.data(), b.data(), out.data()}, o);
    expect_close(out, reference(c, in, true), 1e-5, 1e-5);
  }
  // More accumulators and operand tiles than AMX's 8 registers: one product at a time.
  CompileOptions o;
  o.target = kAmxTarget;
  o.bf16_products = true;
  EXPECT_EQ(emit_ir(blocked_matmul(96, 64, 128, 3, 2, true), o, false).find("%amx.acc"),
            std::string::npos);
}

// Nests that are not one tile product stay loops, marked or not: an odd depth, more rows than a
// tile has, C contiguous along no loop of the nest.
TEST(AmxTile, NestsThatAreNotOneTileStayLoops) {
  CompileOptions o;
  o.target = kAmxTarget;
  o.bf16_products = true;
  for (const Case& c :
       {Case{32, 32, 34, 16, 16, 17}, Case{64, 32, 64, 32, 16, 32}, Case{32, 64, 64, 16, 32, 32}}) {
    EXPECT_EQ(emit_ir(tiled_matmul(c), o).find("tdpbf16ps"), std::string::npos)
        << c.tm << "x" << c.tn << "x" << c.tk;
    const Inputs in = inputs(c);
    expect_close(run_case(c, in, true), reference(c, in, false), 1e-5, 1e-5);
  }
}

} // namespace
} // namespace mt::llvm_cpu::test
