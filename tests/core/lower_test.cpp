// Tests of lowering (core/lower/lower.h): block lowering with reduction init and predicates,
// allocation placement and buffer compaction, checked structurally and by running the result
// in the interpreter against plain C++ loops.
#include "core/lower/lower.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/lower/interpreter.h"
#include "core/lower/software_pipeline.h"
#include "core/lower/storage_align.h"
#include "core/runtime/ndarray.h"

namespace mt {
namespace {

Expr ld(const Buffer& b, std::vector<Expr> idx) {
  return make_load(b, std::move(idx));
}

Stmt realize(const std::string& name, std::vector<IterVar> ivs, std::vector<Expr> values, Stmt body,
             Stmt init = nullptr, Expr predicate = Expr()) {
  Block b;
  b.name = name;
  b.iter_vars = std::move(ivs);
  b.body = std::move(body);
  b.init = std::move(init);
  return make_block_realize(std::move(values), std::move(predicate), std::move(b));
}

int count_kind(const Stmt& s, StmtKind k) {
  int n = 0;
  visit_stmts(s, [&](const Stmt& x) {
    n += x->kind == k;
    return true;
  });
  return n;
}

std::vector<const AllocateNode*> allocations(const Stmt& s) {
  std::vector<const AllocateNode*> out;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::Allocate) out.push_back(as<AllocateNode>(x));
    return true;
  });
  return out;
}

// The For loop (if any) whose body directly is, or starts with, an Allocate of `name`.
const ForNode* loop_around_allocation(const Stmt& s, const std::string& name) {
  const ForNode* found = nullptr;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind != StmtKind::For) return true;
    Stmt b = as<ForNode>(x)->body;
    while (b && b->kind == StmtKind::Allocate) {
      if (as<AllocateNode>(b)->buffer->name == name) found = as<ForNode>(x);
      b = as<AllocateNode>(b)->body;
    }
    return true;
  });
  return found;
}

// C[i, j] = sum_k A[i, k] * B[k, j], with the reduction loop optionally split by `kf`.
Function matmul(int64_t M, int64_t N, int64_t K, int64_t kf = 0) {
  Buffer A = make_buffer("A", DType::f32(), {M, K});
  Buffer B = make_buffer("B", DType::f32(), {K, N});
  Buffer C = make_buffer("C", DType::f32(), {M, N});
  Expr i = make_var("i"), j = make_var("j"), k = make_var("k");
  Expr vi = make_var("vi"), vj = make_var("vj"), vk = make_var("vk");
  Stmt init = make_store(C, {vi, vj}, float_imm(0.0));
  Stmt update = make_store(C, {vi, vj}, ld(C, {vi, vj}) + ld(A, {vi, vk}) * ld(B, {vk, vj}));
  std::vector<IterVar> ivs = {
      {vi, M, IterKind::Spatial}, {vj, N, IterKind::Spatial}, {vk, K, IterKind::Reduce}};
  Stmt loops;
  if (kf == 0) {
    loops = make_for(k, K, realize("C", ivs, {i, j, k}, update, init));
  } else {
    Expr ko = make_var("ko"), ki = make_var("ki");
    int64_t outer = (K + kf - 1) / kf;
    Expr kv = ko * kf + ki;
    loops =
        make_for(ko, outer, make_for(ki, kf, realize("C", ivs, {i, j, kv}, update, init, kv < K)));
  }
  Function f;
  f.name = "matmul";
  f.params = {A, B, C};
  f.body = make_for(i, M, make_for(j, N, loops));
  return f;
}

NDArray naive_matmul(const NDArray& a, const NDArray& b, int64_t M, int64_t N, int64_t K) {
  NDArray c(DType::f32(), {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a.data_as<float>()[i * K + k] * b.data_as<float>()[k * N + j];
      c.data_as<float>()[i * N + j] = acc;
    }
  return c;
}

void expect_close(const NDArray& got, const NDArray& want) {
  std::string why;
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5, &why)) << why;
}

TEST(LowerBlocks, MatmulWithReductionInit) {
  const int64_t M = 5, N = 6, K = 7;
  Function f = matmul(M, N, K);
  Function low = lower(f);
  EXPECT_TRUE(low.lowered);
  EXPECT_EQ(count_kind(low.body, StmtKind::BlockRealize), 0);
  EXPECT_EQ(count_kind(low.body, StmtKind::For), 3);
  EXPECT_GE(count_kind(low.body, StmtKind::IfThenElse), 1); // the init guard
  EXPECT_EQ(low.params.size(), 3u);
  EXPECT_EQ(low.params[2], f.params[2]); // params keep their buffers

  NDArray a(DType::f32(), {M, K}), b(DType::f32(), {K, N}), c(DType::f32(), {M, N});
  a.fill_random(1);
  b.fill_random(2);
  c.fill(1234.0); // the init must overwrite whatever was there
  interpret(low, {&a, &b, &c});
  expect_close(c, naive_matmul(a, b, M, N, K));
}

TEST(LowerBlocks, InitGuardOfSingleValueReductionIsFolded) {
  Function low = lower(matmul(2, 3, 1));
  EXPECT_EQ(count_kind(low.body, StmtKind::IfThenElse), 0);
  NDArray a(DType::f32(), {2, 1}), b(DType::f32(), {1, 3}), c(DType::f32(), {2, 3});
  a.fill_random(12);
  b.fill_random(13);
  c.fill(99.0);
  interpret(low, {&a, &b, &c});
  expect_close(c, naive_matmul(a, b, 2, 3, 1));
}

TEST(LowerBlocks, SplitReductionInitAndPredicate) {
  const int64_t M = 3, N = 4, K = 10;
  Function f = matmul(M, N, K, /*kf=*/4); // 12 iterations for 10 values: predicate needed
  NDArray a(DType::f32(), {M, K}), b(DType::f32(), {K, N}), c(DType::f32(), {M, N});
  a.fill_random(3);
  b.fill_random(4);
  c.fill(-7.0);
  interpret(f, {&a, &b, &c}); // lowers on the fly
  expect_close(c, naive_matmul(a, b, M, N, K));
}

TEST(LowerBlocks, PredicateGuardsTheBody) {
  const int64_t n = 10, limit = 7;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr i = make_var("i"), vi = make_var("vi");
  Function f;
  f.name = "guarded";
  f.params = {A, C};
  f.body = make_for(i, n,
                    realize("C", {{vi, n, IterKind::Spatial}}, {i},
                            make_store(C, {vi}, ld(A, {vi}) * 2.0), nullptr, i < limit));
  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(5);
  c.fill(-1.0);
  interpret(f, {&a, &c});
  for (int64_t x = 0; x < n; ++x) {
    float want = x < limit ? a.data_as<float>()[x] * 2.0f : -1.0f;
    EXPECT_EQ(c.data_as<float>()[x], want) << "at " << x;
  }
}

TEST(LowerBlocks, NonPerfectSplitByHand) {
  const int64_t n = 10, factor = 4, outer = 3;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr io = make_var("io"), ii = make_var("ii"), vi = make_var("vi");
  Expr idx = io * factor + ii;
  Function f;
  f.name = "split";
  f.params = {A, C};
  f.body =
      make_for(io, outer,
               make_for(ii, factor,
                        realize("C", {{vi, n, IterKind::Spatial}}, {idx},
                                make_store(C, {vi}, ld(A, {vi}) * 3.0 + 1.0), nullptr, idx < n)));
  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(6);
  interpret(f, {&a, &c}); // without the predicate this would be out of bounds
  for (int64_t x = 0; x < n; ++x)
    EXPECT_EQ(c.data_as<float>()[x], a.data_as<float>()[x] * 3.0f + 1.0f) << "at " << x;
}

// B = A * 2 (intermediate), C = B + 1, in separate loop nests: B lives at the root, whole.
TEST(LowerPlacement, ProducerConsumerAtRoot) {
  const int64_t n = 16;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer B = make_buffer("B", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr i0 = make_var("i0"), i1 = make_var("i1"), v0 = make_var("v0"), v1 = make_var("v1");
  Function f;
  f.name = "producer_consumer";
  f.params = {A, C};
  f.buffers = {B};
  f.body = make_seq(
      {make_for(i0, n, realize("B", {{v0, n}}, {i0}, make_store(B, {v0}, ld(A, {v0}) * 2.0))),
       make_for(i1, n, realize("C", {{v1, n}}, {i1}, make_store(C, {v1}, ld(B, {v1}) + 1.0)))});
  Function low = lower(f);
  ASSERT_EQ(low.body->kind, StmtKind::Allocate);
  EXPECT_EQ(as<AllocateNode>(low.body)->buffer->name, "B");
  EXPECT_EQ(as<AllocateNode>(low.body)->buffer->shape, std::vector<int64_t>{n});
  EXPECT_TRUE(low.buffers.empty()); // declared by the Allocate instead

  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(7);
  interpret(low, {&a, &c});
  for (int64_t x = 0; x < n; ++x)
    EXPECT_EQ(c.data_as<float>()[x], a.data_as<float>()[x] * 2.0f + 1.0f);
}

// for i: { for j: B[i, j] = A[i, j] + 1;  for j: C[i, j] = B[i, j] * 2 }  (B intermediate)
// B is allocated inside loop i and compacted from [4, 8] to [1, 8].
TEST(LowerCompaction, RowBufferUnderLoop) {
  const int64_t M = 4, N = 8;
  Buffer A = make_buffer("A", DType::f32(), {M, N});
  Buffer B = make_buffer("B", DType::f32(), {M, N});
  Buffer C = make_buffer("C", DType::f32(), {M, N});
  Expr i = make_var("i"), j0 = make_var("j0"), j1 = make_var("j1");
  Expr bi = make_var("bi"), bj = make_var("bj"), ci = make_var("ci"), cj = make_var("cj");
  Function f;
  f.name = "rows";
  f.params = {A, C};
  f.buffers = {B};
  f.body = make_for(i, M,
                    make_seq({make_for(j0, N,
                                       realize("B", {{bi, M}, {bj, N}}, {i, j0},
                                               make_store(B, {bi, bj}, ld(A, {bi, bj}) + 1.0))),
                              make_for(j1, N,
                                       realize("C", {{ci, M}, {cj, N}}, {i, j1},
                                               make_store(C, {ci, cj}, ld(B, {ci, cj}) * 2.0)))}),
                    ForKind::Parallel);
  Function low = lower(f);
  const ForNode* loop = loop_around_allocation(low.body, "B");
  ASSERT_NE(loop, nullptr) << "B must be allocated inside a loop";
  EXPECT_EQ(loop->loop_var->name, "i");
  EXPECT_EQ(loop->for_kind, ForKind::Parallel); // loop kinds survive lowering
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, (std::vector<int64_t>{1, N}));
  EXPECT_EQ(allocs[0]->buffer->dtype, DType::f32());
  EXPECT_EQ(allocs[0]->buffer->scope, B->scope);

  NDArray a(DType::f32(), {M, N}), c(DType::f32(), {M, N});
  a.fill_random(8);
  interpret(low, {&a, &c});
  for (int64_t x = 0; x < M * N; ++x)
    EXPECT_EQ(c.data_as<float>()[x], (a.data_as<float>()[x] + 1.0f) * 2.0f) << "at " << x;
}

// A 2-D tile of an intermediate computed at the consumer's outer loops: the compact buffer
// starts at (io*4, jo*4), an expression of the outer loop variables.
TEST(LowerCompaction, TileWithSymbolicOffset) {
  const int64_t n = 8, t = 4;
  Buffer A = make_buffer("A", DType::f32(), {n, n});
  Buffer B = make_buffer("B", DType::f32(), {n, n}, "cache");
  Buffer C = make_buffer("C", DType::f32(), {n, n});
  Expr io = make_var("io"), jo = make_var("jo");
  Expr p0 = make_var("p0"), p1 = make_var("p1"), q0 = make_var("q0"), q1 = make_var("q1");
  Expr bi = make_var("bi"), bj = make_var("bj"), ci = make_var("ci"), cj = make_var("cj");
  Stmt produce = make_for(p0, t,
                          make_for(p1, t,
                                   realize("B", {{bi, n}, {bj, n}}, {io * t + p0, jo * t + p1},
                                           make_store(B, {bi, bj}, ld(A, {bi, bj}) - 0.5))));
  // The consumer reads B transposed inside the tile, so both index orders are covered.
  Stmt consume = make_for(
      q0, t,
      make_for(q1, t,
               realize("C", {{ci, n}, {cj, n}}, {io * t + q0, jo * t + q1},
                       make_store(C, {ci, cj},
                                  ld(B, {ci, cj}) * ld(B, {io * t + q1 % t, jo * t + q0})))));
  Function f;
  f.name = "tiles";
  f.params = {A, C};
  f.buffers = {B};
  f.body = make_for(io, n / t, make_for(jo, n / t, make_seq({produce, consume})));
  Function low = lower(f);
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, (std::vector<int64_t>{t, t}));
  EXPECT_EQ(allocs[0]->buffer->scope, "cache");
  const ForNode* loop = loop_around_allocation(low.body, "B");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->loop_var->name, "jo");

  NDArray a(DType::f32(), {n, n}), c(DType::f32(), {n, n});
  a.fill_random(9);
  interpret(low, {&a, &c}); // any wrong offset is out of bounds of the 4x4 tile or NaN
  const float* A_ = a.data_as<float>();
  for (int64_t x = 0; x < n; ++x)
    for (int64_t y = 0; y < n; ++y) {
      int64_t tx = x / t * t, ty = y / t * t;
      float b_xy = A_[x * n + y] - 0.5f;
      float b_t = A_[(tx + (y - ty)) * n + (ty + (x - tx))] - 0.5f;
      EXPECT_EQ(c.data_as<float>()[x * n + y], b_xy * b_t) << x << "," << y;
    }
}

// Shared memory is shared by the threads of a block: it may not become per-thread even when
// every access sits inside the same threadIdx loop.
TEST(LowerPlacement, SharedBufferStaysAboveThreadLoops) {
  const int64_t n = 32, t = 8;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer S = make_buffer("S", DType::f32(), {n}, "shared");
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr bx = make_var("bx"), tx = make_var("tx"), vs = make_var("vs"), vc = make_var("vc");
  Expr idx = bx * t + tx;
  Stmt inner = make_seq({realize("S", {{vs, n}}, {idx}, make_store(S, {vs}, ld(A, {vs}) + 3.0)),
                         realize("C", {{vc, n}}, {idx}, make_store(C, {vc}, ld(S, {vc}) * 0.5))});
  Function f;
  f.name = "shared";
  f.params = {A, C};
  f.buffers = {S};
  f.body = make_for(bx, n / t, make_for(tx, t, inner, ForKind::ThreadBinding, "threadIdx.x"),
                    ForKind::ThreadBinding, "blockIdx.x");
  Function low = lower(f);
  const ForNode* loop = loop_around_allocation(low.body, "S");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->thread_tag, "blockIdx.x");
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, std::vector<int64_t>{t}); // relaxed over threadIdx.x
  ASSERT_EQ(allocs[0]->body->kind, StmtKind::For);
  EXPECT_EQ(as<ForNode>(allocs[0]->body)->thread_tag, "threadIdx.x");

  NDArray a(DType::f32(), {n}), c(DType::f32(), {n});
  a.fill_random(10);
  interpret(low, {&a, &c});
  for (int64_t x = 0; x < n; ++x)
    EXPECT_EQ(c.data_as<float>()[x], (a.data_as<float>()[x] + 3.0f) * 0.5f);
}

// A GPU k-tile: a shared buffer filled and read under a serial k loop below the thread loop
// holds one tile (the k loop's iterations touch disjoint parts), not the whole k extent, its
// start moving with k; the result is unchanged.
TEST(LowerCompaction, SharedTileUnderASerialLoopHoldsOneIteration) {
  const int64_t n = 64, t = 8, tile = 16;
  Buffer A = make_buffer("A", DType::f32(), {n});
  Buffer S = make_buffer("S", DType::f32(), {n}, "shared");
  Buffer C = make_buffer("C", DType::f32(), {t});
  Expr tx = make_var("tx"), k = make_var("k"), f = make_var("f"), r = make_var("r");
  Expr vs = make_var("vs"), vc = make_var("vc"), vr = make_var("vr");
  // for tx (threadIdx.x): for k: { S[k*16 + f] = A[...] for f; C[tx] += S[k*16 + r] for r }
  Stmt fetch = make_for(
      f, tile, realize("S", {{vs, n}}, {k * tile + f}, make_store(S, {vs}, ld(A, {vs}) * 2.0)));
  Stmt use = make_for(r, tile,
                      realize("C", {{vc, t}, {vr, n, IterKind::Reduce}}, {tx, k * tile + r},
                              make_store(C, {vc}, ld(C, {vc}) + ld(S, {vr}) * ld(S, {vr})),
                              make_store(C, {vc}, 0.0)));
  Function fn;
  fn.name = "tile";
  fn.params = {A, C};
  fn.buffers = {S};
  fn.body = make_for(tx, t, make_for(k, n / tile, make_seq({fetch, use})), ForKind::ThreadBinding,
                     "threadIdx.x");
  Function low = lower(fn);
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, std::vector<int64_t>{tile});

  NDArray a(DType::f32(), {n}), c(DType::f32(), {t});
  a.fill_random(11);
  interpret(low, {&a, &c});
  double want = 0;
  for (int64_t x = 0; x < n; ++x)
    want += 4.0 * a.data_as<float>()[x] * a.data_as<float>()[x];
  for (int64_t x = 0; x < t; ++x)
    EXPECT_NEAR(c.data_as<float>()[x], want, 1e-4 * std::abs(want));
}

// When iterations of the serial loop share elements (a sliding window: iteration k reads what
// k - 1 wrote), one iteration's region would hand data to the next through other slots: the
// buffer keeps the region of all iterations.
TEST(LowerCompaction, SharedBufferWhoseIterationsOverlapKeepsTheWholeRegion) {
  const int64_t n = 32, t = 4;
  Buffer A = make_buffer("A", DType::f32(), {n + 1});
  Buffer S = make_buffer("S", DType::f32(), {n + 1}, "shared");
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr tx = make_var("tx"), k = make_var("k"), vs = make_var("vs"), vc = make_var("vc");
  // S[k + 1] = A[k + 1]; C[k] = S[k] + S[k + 1] (S[0] written before the loop)
  Stmt first = realize("S0", {{vs, n + 1}}, {0}, make_store(S, {vs}, ld(A, {vs})));
  Stmt body =
      make_seq({realize("S", {{vs, n + 1}}, {k + 1}, make_store(S, {vs}, ld(A, {vs}))),
                realize("C", {{vc, n}}, {k}, make_store(C, {vc}, ld(S, {vc}) + ld(S, {vc + 1})))});
  Function fn;
  fn.name = "window";
  fn.params = {A, C};
  fn.buffers = {S};
  fn.body = make_for(tx, t, make_seq({first, make_for(k, n, body)}), ForKind::ThreadBinding,
                     "threadIdx.x");
  // Without `first` under the same loops, k is not common to every access; with it inside k
  // instead (the overlapping case proper) the check must refuse the per-iteration region.
  Stmt overlapping =
      make_seq({realize("S", {{vs, n + 1}}, {k}, make_store(S, {vs}, ld(A, {vs}))),
                realize("S1", {{vs, n + 1}}, {k + 1}, make_store(S, {vs}, ld(A, {vs}))),
                realize("C", {{vc, n}}, {k}, make_store(C, {vc}, ld(S, {vc}) + ld(S, {vc + 1})))});
  for (const Stmt& b : {make_seq({first, make_for(k, n, body)}), make_for(k, n, overlapping)}) {
    fn.body = make_for(tx, t, b, ForKind::ThreadBinding, "threadIdx.x");
    Function low = lower(fn);
    auto allocs = allocations(low.body);
    ASSERT_EQ(allocs.size(), 1u);
    EXPECT_EQ(allocs[0]->buffer->shape, std::vector<int64_t>{n + 1});
    NDArray a(DType::f32(), {n + 1}), c(DType::f32(), {n});
    a.fill_random(12);
    interpret(low, {&a, &c});
    for (int64_t x = 0; x < n; ++x)
      EXPECT_EQ(c.data_as<float>()[x], a.data_as<float>()[x] + a.data_as<float>()[x + 1]);
  }
}

// storage_align (a block annotation left by the primitive): the staged buffer's rows get the
// stride asked for -- 32 + 8 = 40 elements, not 32 -- by an inner dimension widened with
// elements nothing touches; the result is unchanged.
TEST(LowerStorageAlign, PadsTheRowStrideOfTheCompactedBuffer) {
  const int64_t rows = 8, cols = 32;
  Buffer A = make_buffer("A", DType::f32(), {cols, rows});
  Buffer S = make_buffer("S", DType::f32(), {rows, cols}, "shared");
  Buffer C = make_buffer("C", DType::f32(), {rows, cols});
  Expr i = make_var("i"), j = make_var("j"), vi = make_var("vi"), vj = make_var("vj");
  auto nest = [&](Stmt body) { return make_for(i, rows, make_for(j, cols, std::move(body))); };
  Block stage;
  stage.name = "S";
  stage.iter_vars = {{vi, rows}, {vj, cols}};
  stage.body = make_store(S, {vi, vj}, ld(A, {vj, vi}) + 1.0); // a transposing copy
  stage.annotations["storage_align.S.0"] = std::string("32:8");
  Function fn;
  fn.name = "aligned";
  fn.params = {A, C};
  fn.buffers = {S};
  fn.body = make_seq({nest(make_block_realize({i, j}, Expr(), stage)),
                      nest(realize("C", {{vi, rows}, {vj, cols}}, {i, j},
                                   make_store(C, {vi, vj}, ld(S, {vi, vj}) * 2.0)))});
  Function low = lower(fn);
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, (std::vector<int64_t>{rows, 40}));

  NDArray a(DType::f32(), {cols, rows}), c(DType::f32(), {rows, cols});
  a.fill_random(13);
  interpret(low, {&a, &c});
  for (int64_t x = 0; x < rows; ++x)
    for (int64_t y = 0; y < cols; ++y)
      EXPECT_EQ(c.data_as<float>()[x * cols + y], (a.data_as<float>()[y * rows + x] + 1.0f) * 2.0f);

  // A malformed annotation (hand-written IR) is refused with the block and the key.
  stage.annotations["storage_align.S.0"] = std::string("32");
  fn.body = nest(make_block_realize({i, j}, Expr(), stage));
  try {
    lower(fn);
    ADD_FAILURE() << "a malformed storage_align annotation was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block 'S': annotation 'storage_align.S.0'"),
              std::string::npos)
        << e.what();
  }
}

// Software pipelining (software_pipeline.h): a k loop whose threads stage a tile in shared
// memory and then read each other's elements. With `software_pipeline_stages = S` the tile
// gets S slots, a prologue fills the first S - 1, and each iteration fetches S - 1 ahead; the
// interpreter runs the result and it equals a double-precision reference.
struct StagedLoop {
  static constexpr int64_t t = 4, w = 2; // threads, elements each thread fetches
  int64_t n_k = 6;
  Buffer A = make_buffer("A", DType::f32(), {6 * t * w});
  Buffer C = make_buffer("C", DType::f32(), {t});
  Expr tx = make_var("tx"), f = make_var("f"), k = make_var("k"), j = make_var("j");
  Expr vs = make_var("vs"), vc = make_var("vc");

  // fetch (the threads cooperatively, as a GPU schedule's cooperative fetch):
  //   S[k*t*w + f*w + j] = A[...] for f < t, j < w
  // use: C[tx] += 3 * S[k*t*w + ((tx+1)%t)*w + 1], another thread's element.
  // `scope`: the staging buffer's ("global" is not a tile lowering pipelines).
  Function function(Annotations k_annotations, const std::string& scope = "shared") const {
    Buffer S = make_buffer("S", DType::f32(), {6 * t * w}, scope);
    Stmt fetch = make_for(f, t,
                          make_for(j, w,
                                   realize("S", {{vs, 6 * t * w}}, {k * (t * w) + f * w + j},
                                           make_store(S, {vs}, ld(A, {vs})))),
                          ForKind::ThreadBinding, "threadIdx.x");
    Expr other = k * (t * w) + floormod(tx + 1, int_imm(t)) * w + 1;
    Stmt use = realize("C", {{vc, 6 * t * w}}, {other},
                       make_store(C, {tx}, ld(C, {tx}) + ld(S, {vc}) * 3.0));
    Stmt init = realize("C0", {}, {}, make_store(C, {tx}, float_imm(0)));
    Function fn;
    fn.name = "staged";
    fn.params = {A, C};
    fn.buffers = {S};
    fn.body = make_for(tx, t,
                       make_seq({init, make_for(k, n_k, make_seq({fetch, use}), ForKind::Serial, "",
                                                std::move(k_annotations))}),
                       ForKind::ThreadBinding, "threadIdx.x");
    return fn;
  }

  void expect_result(const Function& low) const {
    NDArray a(DType::f32(), {6 * t * w}), c(DType::f32(), {t});
    a.fill_random(21);
    interpret(low, {&a, &c});
    for (int64_t x = 0; x < t; ++x) {
      double want = 0;
      for (int64_t kk = 0; kk < n_k; ++kk)
        want += 3.0 * a.data_as<float>()[kk * t * w + ((x + 1) % t) * w + 1];
      EXPECT_NEAR(c.data_as<float>()[x], want, 1e-5 * (1 + std::abs(want))) << "thread " << x;
    }
  }
};

const ForNode* loop_annotated(const Stmt& s, const std::string& key, int64_t* value = nullptr) {
  const ForNode* found = nullptr;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::For && as<ForNode>(x)->annotations.count(key)) {
      found = as<ForNode>(x);
      if (value) *value = std::get<int64_t>(found->annotations.at(key));
    }
    return !found;
  });
  return found;
}

TEST(LowerSoftwarePipeline, FetchesAheadIntoSlotsAndComputesTheSame) {
  StagedLoop g;
  // Without the annotation: one slot, no prologue.
  Function plain = lower(g.function({}));
  ASSERT_EQ(allocations(plain.body).size(), 1u);
  EXPECT_EQ(allocations(plain.body)[0]->buffer->shape, (std::vector<int64_t>{8}));
  g.expect_result(plain);
  for (int64_t stages : {2, 3, 6}) {
    SCOPED_TRACE("stages " + std::to_string(stages));
    Function low = lower(g.function({{kSoftwarePipelineStages, stages}}));
    auto allocs = allocations(low.body);
    ASSERT_EQ(allocs.size(), 1u);
    EXPECT_EQ(allocs[0]->buffer->shape, (std::vector<int64_t>{stages, 8}));
    int64_t applied = 0, prologue_stages = 0;
    const ForNode* loop = loop_annotated(low.body, kSoftwarePipelineStages, &applied);
    const ForNode* prologue = loop_annotated(low.body, kSoftwarePipelinePrologue, &prologue_stages);
    ASSERT_TRUE(loop && prologue);
    EXPECT_EQ(applied, stages);
    EXPECT_EQ(prologue_stages, stages);
    EXPECT_EQ(prologue->extent, stages - 1);
    EXPECT_EQ(loop->extent, g.n_k);
    // The pipelined body: the guarded fetch ahead first, its copy marked for asynchrony.
    ASSERT_EQ(loop->body->kind, StmtKind::Seq);
    const Stmt& ahead = as<SeqNode>(loop->body)->stmts.at(0);
    ASSERT_EQ(ahead->kind, StmtKind::IfThenElse);
    EXPECT_NE(loop_annotated(ahead, kSoftwarePipelineAsyncCopy), nullptr);
    EXPECT_NE(loop_annotated(prologue->body, kSoftwarePipelineAsyncCopy), nullptr);
    // The prologue's loops are its own.
    EXPECT_NE(as<ForNode>(prologue->body)->loop_var.get(),
              as<ForNode>(as<IfThenElseNode>(ahead)->then_case)->loop_var.get());
    g.expect_result(low);
  }
  // More stages than iterations: as many as there are.
  g.n_k = 3;
  Function cut = lower(g.function({{kSoftwarePipelineStages, int64_t{8}}}));
  EXPECT_EQ(allocations(cut.body)[0]->buffer->shape, (std::vector<int64_t>{3, 8}));
  g.expect_result(cut);
}

// Spare slots (for consumers that read asynchronously, wgmma): S + n slots, the fetch still
// S - 1 ahead, slot indices modulo S + n; the annotation stays on the loop as applied, and the
// interpreter's result is the same.
TEST(LowerSoftwarePipeline, SpareSlotsAddSlotsAndComputeTheSame) {
  StagedLoop g;
  for (int64_t stages : {2, 3}) {
    SCOPED_TRACE("stages " + std::to_string(stages));
    Function low = lower(
        g.function({{kSoftwarePipelineStages, stages}, {kSoftwarePipelineSpareSlots, int64_t{1}}}));
    auto allocs = allocations(low.body);
    ASSERT_EQ(allocs.size(), 1u);
    EXPECT_EQ(allocs[0]->buffer->shape, (std::vector<int64_t>{stages + 1, 8}));
    int64_t spare = 0, prologue_stages = 0;
    const ForNode* loop = loop_annotated(low.body, kSoftwarePipelineSpareSlots, &spare);
    const ForNode* prologue = loop_annotated(low.body, kSoftwarePipelinePrologue, &prologue_stages);
    ASSERT_TRUE(loop && prologue);
    EXPECT_EQ(spare, 1);
    EXPECT_EQ(loop->annotations.count(kSoftwarePipelineStages), 1u);
    EXPECT_EQ(prologue->extent, stages - 1);
    g.expect_result(low);
  }
}

// Where the body does not start by filling a shared buffer of the loop, nothing changes and the
// annotation goes (a target never sees a request lowering did not carry out).
TEST(LowerSoftwarePipeline, LeavesALoopItCannotPipelineAsItWas) {
  StagedLoop g;
  Function low = lower(g.function({{kSoftwarePipelineStages, int64_t{2}}}, "global"));
  EXPECT_EQ(loop_annotated(low.body, kSoftwarePipelineStages), nullptr);
  EXPECT_EQ(loop_annotated(low.body, kSoftwarePipelinePrologue), nullptr);
  g.expect_result(low);
  // One iteration: nothing to overlap.
  g.n_k = 1;
  Function one = lower(g.function({{kSoftwarePipelineStages, int64_t{2}}}));
  EXPECT_EQ(loop_annotated(one.body, kSoftwarePipelinePrologue), nullptr);
  EXPECT_EQ(allocations(one.body)[0]->buffer->shape, (std::vector<int64_t>{8}));
  g.expect_result(one);
}

TEST(LowerStorageAlign, WidensTheNextDimensionOnlyWhereTheStrideCanMeetTheAlignment) {
  // stride(0) = 16 * 4 = 64; 17 * 4 = 68 is the first with stride % 32 == 4.
  EXPECT_EQ(aligned_shape({2, 16, 4}, {{0, 32, 4}}), (std::vector<int64_t>{2, 17, 4}));
  // stride(1) = 4: the innermost dimension widened to 10, the first extent with 10 % 8 == 2.
  EXPECT_EQ(aligned_shape({2, 16, 4}, {{1, 8, 2}}), (std::vector<int64_t>{2, 16, 10}));
  // Strides of 2 never reach an odd remainder: left as it is.
  EXPECT_EQ(aligned_shape({4, 8, 2}, {{0, 4, 1}}), (std::vector<int64_t>{4, 8, 2}));
  // The innermost axis has stride 1 and nothing after it to widen.
  EXPECT_EQ(aligned_shape({4, 8}, {{1, 4, 1}}), (std::vector<int64_t>{4, 8}));
  // Already aligned: unchanged.
  EXPECT_EQ(aligned_shape({4, 40}, {{0, 32, 8}}), (std::vector<int64_t>{4, 40}));
}

TEST(LowerPlacement, LocalBufferBecomesPerIteration) {
  // A reduction into an intermediate accumulator computed under the consumer's loop.
  const int64_t M = 6, K = 5;
  Buffer A = make_buffer("A", DType::f32(), {M, K});
  Buffer acc = make_buffer("acc", DType::f32(), {M}, "local");
  Buffer C = make_buffer("C", DType::f32(), {M});
  Expr i = make_var("i"), k = make_var("k"), ai = make_var("ai"), ak = make_var("ak");
  Expr ci = make_var("ci");
  Stmt reduce = make_for(k, K,
                         realize("acc", {{ai, M}, {ak, K, IterKind::Reduce}}, {i, k},
                                 make_store(acc, {ai}, ld(acc, {ai}) + ld(A, {ai, ak})),
                                 make_store(acc, {ai}, float_imm(0.0))));
  Stmt out = realize("C", {{ci, M}}, {i}, make_store(C, {ci}, sqrt(ld(acc, {ci}) * ld(acc, {ci}))));
  Function f;
  f.name = "row_norm";
  f.params = {A, C};
  f.buffers = {acc};
  f.body = make_for(i, M, make_seq({reduce, out}));
  Function low = lower(f);
  auto allocs = allocations(low.body);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape, std::vector<int64_t>{1});
  EXPECT_EQ(loop_around_allocation(low.body, "acc")->loop_var->name, "i");

  NDArray a(DType::f32(), {M, K}), c(DType::f32(), {M});
  a.fill_random(11);
  interpret(low, {&a, &c});
  for (int64_t r = 0; r < M; ++r) {
    float s = 0;
    for (int64_t x = 0; x < K; ++x)
      s += a.data_as<float>()[r * K + x];
    EXPECT_EQ(c.data_as<float>()[r], std::sqrt(s * s));
  }
}

TEST(LowerPlacement, UnusedIntermediateIsDropped) {
  Function f = matmul(2, 2, 2);
  f.buffers = {make_buffer("unused", DType::f32(), {100})};
  Function low = lower(f);
  EXPECT_EQ(count_kind(low.body, StmtKind::Allocate), 0);
  EXPECT_TRUE(low.buffers.empty());
}

TEST(LowerPlacement, ReadBeforeWriteShowsAsNaN) {
  // B is read but never written: the poison fill of fresh storage must reach the output.
  const int64_t n = 4;
  Buffer B = make_buffer("B", DType::f32(), {n});
  Buffer C = make_buffer("C", DType::f32(), {n});
  Expr i = make_var("i"), vi = make_var("vi");
  Function f;
  f.name = "uninit";
  f.params = {C};
  f.buffers = {B};
  f.body = make_for(i, n, realize("C", {{vi, n}}, {i}, make_store(C, {vi}, ld(B, {vi}) + 1.0)));
  NDArray c(DType::f32(), {n});
  interpret(f, {&c});
  for (int64_t x = 0; x < n; ++x)
    EXPECT_TRUE(std::isnan(c.data_as<float>()[x]));
}

TEST(LowerPasses, UndeclaredBufferIsRejected) {
  Function f = matmul(2, 2, 2);
  f.params.pop_back(); // C is now neither a parameter nor an intermediate
  try {
    lower(f);
    FAIL() << "undeclared buffer accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("buffer C"), std::string::npos) << e.what();
  }
}

// Largest depth of IfThenElse nodes below For loops of kind `k` (how deep a guard sits).
bool guard_under_loop_kind(const Stmt& s, ForKind k, bool inside = false) {
  if (!s) return false;
  if (s->kind == StmtKind::IfThenElse && inside) return true;
  bool in = inside || (s->kind == StmtKind::For && as<ForNode>(s)->for_kind == k);
  for (const Stmt& c : children(s))
    if (guard_under_loop_kind(c, k, in)) return true;
  return false;
}

// The imperfect split of 10 rows into 3 x 4 guards every store with `io*4 + ii < 10`. After
// partitioning, the first two row blocks run without any guard, the last keeps it, and the
// numbers are those of the unpartitioned program.
TEST(LowerPasses, PartitionLoopsTakesTheGuardOutOfFullTiles) {
  const int64_t n = 10, factor = 4, outer = 3, m = 8;
  Buffer A = make_buffer("A", DType::f32(), {n, m});
  Buffer C = make_buffer("C", DType::f32(), {n, m});
  Expr io = make_var("io"), ii = make_var("ii"), j = make_var("j"), vi = make_var("vi"),
       vj = make_var("vj");
  Expr idx = io * factor + ii;
  Function f;
  f.name = "split";
  f.params = {A, C};
  f.body = make_for(
      io, outer,
      make_for(
          ii, factor,
          make_for(j, m,
                   realize("C", {{vi, n, IterKind::Spatial}, {vj, m, IterKind::Spatial}}, {idx, j},
                           make_store(C, {vi, vj}, ld(A, {vi, vj}) * 3.0 + 1.0), nullptr, idx < n),
                   ForKind::Vectorized),
          ForKind::Unrolled),
      ForKind::Parallel);
  Function plain = lower(f, LowerOptions{.partition_loops = false});
  Function parted = lower(f, LowerOptions{.partition_loops = true});
  // plain: one guard, inside the unrolled and vectorized loops. parted: the parallel loop
  // branches on `io < 2`; the full tiles have no guard; in the last tile the unrolled row loop
  // is split into the two rows that exist and the two that do not (empty): no guard left.
  EXPECT_EQ(count_kind(plain.body, StmtKind::IfThenElse), 1);
  EXPECT_TRUE(guard_under_loop_kind(plain.body, ForKind::Unrolled));
  ASSERT_EQ(parted.body->kind, StmtKind::For);
  EXPECT_EQ(as<ForNode>(parted.body)->for_kind, ForKind::Parallel);
  const Stmt& top = as<ForNode>(parted.body)->body;
  ASSERT_EQ(top->kind, StmtKind::IfThenElse);
  EXPECT_EQ(count_kind(parted.body, StmtKind::IfThenElse), 1);
  EXPECT_FALSE(guard_under_loop_kind(parted.body, ForKind::Unrolled));
  EXPECT_EQ(count_kind(as<IfThenElseNode>(top)->else_case, StmtKind::Store), 1);
  NDArray a(DType::f32(), {n, m}), c1(DType::f32(), {n, m}), c2(DType::f32(), {n, m});
  a.fill_random(3);
  c1.fill(NAN);
  c2.fill(NAN);
  interpret(plain, {&a, &c1});
  interpret(parted, {&a, &c2});
  for (int64_t x = 0; x < n * m; ++x)
    ASSERT_EQ(c2.data_as<float>()[x], c1.data_as<float>()[x]) << "at " << x;
}

// A reduction without decompose_reduction guards its init with `k == 0`: the first k
// iteration is peeled, the other iterations carry no test.
TEST(LowerPasses, PartitionLoopsPeelsTheReductionInit) {
  Function low = lower(matmul(2, 3, 4), LowerOptions{.partition_loops = true});
  Function plain = lower(matmul(2, 3, 4), LowerOptions{.partition_loops = false});
  EXPECT_EQ(count_kind(plain.body, StmtKind::IfThenElse), 1);
  // k = 0 (init + update) and a loop over k = 1..3 (update): no test left.
  EXPECT_EQ(count_kind(low.body, StmtKind::IfThenElse), 0);
  EXPECT_EQ(count_kind(low.body, StmtKind::Store), 3);
  NDArray a(DType::f32(), {2, 4}), b(DType::f32(), {4, 3}), c1(DType::f32(), {2, 3}),
      c2(DType::f32(), {2, 3});
  a.fill_random(1);
  b.fill_random(2);
  interpret(plain, {&a, &b, &c1});
  interpret(low, {&a, &b, &c2});
  for (int64_t x = 0; x < 6; ++x)
    ASSERT_EQ(c2.data_as<float>()[x], c1.data_as<float>()[x]);
}

TEST(LowerPasses, LowerIsIdempotentOnLoweredFunctions) {
  Function low = lower(matmul(2, 3, 4));
  Function again = lower(low);
  EXPECT_EQ(again.body, low.body);
  Function empty;
  empty.name = "empty";
  EXPECT_THROW(lower(empty), std::invalid_argument);
}

} // namespace
} // namespace mt
