// rope.RotaryQKVLinear against the projection and rotation written out in double precision:
// both conventions, full and partial rotary, position offsets, multi-head and grouped-query,
// around the separate and the fused projection; v passes through untouched.
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

json rotary_qkv_config(const Dims& d, const Rotary& r, bool fused) {
  return {{"kind", "rope.RotaryQKVLinear"},
          {"input_dim", d.D},
          {"num_heads", d.H},
          {"num_kv_heads", d.KVH},
          {"per_head_dim", d.Dh},
          {"rotary_dim", r.rotary_dim == d.Dh ? 0 : r.rotary_dim},
          {"convention", r.interleaved ? "interleaved" : "rotate_half"},
          {"input_linear",
           {{"kind", fused ? "std.FusedQKVLinear" : "std.QKVLinear"},
            {"input_dim", d.D},
            {"num_heads", d.H},
            {"num_kv_heads", d.KVH},
            {"per_head_dim", d.Dh},
            {"bias", true}}},
          {"rotary",
           {{"kind", "rope.RotaryTable"},
            {"dim", r.rotary_dim == d.Dh ? 0 : r.rotary_dim},
            {"theta", r.theta},
            {"position_offset", r.offset}}}};
}

// q, k, v of the wrapped projection, in double, from the run's parameters under `prefix`.
void projections_ref(const ModelRun& run, const std::string& prefix, const Dims& d, bool fused,
                     const Matrix& x, Matrix& q, Matrix& k, Matrix& v) {
  const size_t rows = d.B * d.S, qd = d.H * d.Dh, kvd = d.KVH * d.Dh;
  if (!fused) {
    Matrix qb = run.param(prefix + "q_bias"), kb = run.param(prefix + "k_bias"),
           vb = run.param(prefix + "v_bias");
    q = linear_ref(x, run.param(prefix + "q_weight"), &qb, rows, d.D, qd);
    k = linear_ref(x, run.param(prefix + "k_weight"), &kb, rows, d.D, kvd);
    v = linear_ref(x, run.param(prefix + "v_weight"), &vb, rows, d.D, kvd);
    return;
  }
  Matrix b = run.param(prefix + "bias");
  Matrix all = linear_ref(x, run.param(prefix + "weight"), &b, rows, d.D, qd + 2 * kvd);
  q.assign(rows * qd, 0), k.assign(rows * kvd, 0), v.assign(rows * kvd, 0);
  for (size_t i = 0; i < rows; ++i) {
    const double* a = &all[i * (qd + 2 * kvd)];
    std::copy(a, a + qd, &q[i * qd]);
    std::copy(a + qd, a + qd + kvd, &k[i * kvd]);
    std::copy(a + qd + kvd, a + qd + 2 * kvd, &v[i * kvd]);
  }
}

void check_rotary_qkv(const Dims& d, const Rotary& r, bool fused) {
  SCOPED_TRACE(std::string(r.interleaved ? "interleaved" : "rotate_half") + " rotary_dim " +
               std::to_string(r.rotary_dim) + "/" + std::to_string(d.Dh) + " offset " +
               std::to_string(r.offset) + (fused ? " fused" : " separate") +
               " H=" + std::to_string(d.H) + " KVH=" + std::to_string(d.KVH));
  const std::vector<int64_t> shape = {static_cast<int64_t>(d.B), static_cast<int64_t>(d.S),
                                      static_cast<int64_t>(d.D)};
  ModelRun run(rotary_qkv_config(d, r, fused), shape);
  Matrix x = input(d.B * d.S * d.D);
  std::vector<Matrix> got = run_all(run, {x});
  ASSERT_EQ(got.size(), 3u);
  Matrix q, k, v;
  projections_ref(run, "input_linear.", d, fused, x, q, k, v);
  expect_close(got[0], rotate_ref(q, d.B, d.S, d.H, d.Dh, r), 2e-5);
  expect_close(got[1], rotate_ref(k, d.B, d.S, d.KVH, d.Dh, r), 2e-5);
  expect_close(got[2], v, 2e-5);
  // The rotation did something: q differs from the unrotated projection past position 0.
  EXPECT_GT(max_abs_error(got[0], q), 0.05);
  // The tensor that hands the table its shape is read by nothing, so no kernel computes it.
  for (const FusedGroup& g : run.exec->groups())
    for (const te::Tensor& c : g.computes)
      EXPECT_NE(c.name(), "rope_width") << g.name;
}

TEST(RotaryQKVLinear, RotateHalfMatchesReference) {
  Dims d{2, 6, 32, 4, 4, 8};
  check_rotary_qkv(d, {8, false, 10000.0, 0}, false);
  check_rotary_qkv(d, {8, false, 10000.0, 0}, true);
  check_rotary_qkv(d, {4, false, 10000.0, 0}, false); // partial: half of each head
  check_rotary_qkv(d, {8, false, 500.0, 13}, true);
}

TEST(RotaryQKVLinear, InterleavedMatchesReference) {
  Dims d{2, 6, 32, 4, 4, 8};
  check_rotary_qkv(d, {8, true, 10000.0, 0}, false);
  check_rotary_qkv(d, {8, true, 10000.0, 0}, true);
  check_rotary_qkv(d, {4, true, 10000.0, 0}, true); // partial
  check_rotary_qkv(d, {2, true, 10000.0, 5}, false);
}

TEST(RotaryQKVLinear, GroupedQueryHeadsRotateAlike) {
  Dims d{1, 5, 24, 6, 2, 8}; // three query heads per key/value head
  check_rotary_qkv(d, {8, false, 10000.0, 3}, false);
  check_rotary_qkv(d, {4, true, 10000.0, 0}, true);
  check_rotary_qkv(d, {6, false, 10000.0, 100}, true); // partial, r/2 odd
}

std::string build_error(const json& cfg) {
  try {
    instantiate_model(host(), cfg, {te::placeholder({1, 4, 32}, DType::f32(), "x")});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RotaryQKVLinear, RefusesBadRotaryWidthsAndConventions) {
  json cfg = rotary_qkv_config({1, 4, 32, 4, 4, 8}, {8, false, 10000.0, 0}, false);
  cfg["rotary_dim"] = 10;
  EXPECT_NE(build_error(cfg).find("rotary_dim 10 must be even and at most per_head_dim 8"),
            std::string::npos)
      << build_error(cfg);
  cfg["rotary_dim"] = 0;
  cfg["convention"] = "gptj";
  EXPECT_NE(build_error(cfg).find("convention 'gptj' (rotate_half, interleaved)"),
            std::string::npos)
      << build_error(cfg);
  // A table of another width than rotary_dim is named.
  cfg["convention"] = "rotate_half";
  cfg["rotary"]["dim"] = 4;
  EXPECT_NE(build_error(cfg).find("the rotary table must give cos and sin [B, S, 4]"),
            std::string::npos)
      << build_error(cfg);
}

} // namespace
} // namespace mt
