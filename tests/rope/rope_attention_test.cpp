// Causal attention with rotary embeddings: std.MultiheadAttention, unchanged, around
// rope.RotaryQKVLinear, against the whole attention in double precision (projection, rotation,
// causal softmax, output projection); and RoPE's defining property, that the scores depend
// only on relative positions, so shifting every position leaves the attention's output as it
// is while q itself changes.
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

json rope_attention_config(const Dims& d, const Rotary& r, bool fused) {
  json rope = {{"kind", "rope.RotaryQKVLinear"},
               {"input_dim", d.D},
               {"num_heads", d.H},
               {"num_kv_heads", d.KVH},
               {"per_head_dim", d.Dh},
               {"rotary_dim", r.rotary_dim},
               {"convention", r.interleaved ? "interleaved" : "rotate_half"},
               {"input_linear", qkv_config(d, fused)},
               {"rotary",
                {{"kind", "rope.RotaryTable"},
                 {"dim", r.rotary_dim},
                 {"theta", r.theta},
                 {"position_offset", r.offset}}}};
  return attention_config("std.MultiheadAttention", d, rope, true);
}

// Projection weights eight times their initial scale: scores of a few units, so that the
// softmax is far from uniform and the positions (the rotation) matter to the output.
void sharpen(ModelRun& run) {
  for (auto& [path, a] : run.params)
    if (path.find("input_linear.") != std::string::npos && path.ends_with("weight"))
      for (int64_t i = 0; i < a.num_elements(); ++i)
        a.data_as<float>()[i] *= 8.0f;
  run.exec->set_params(run.params);
}

void check_attention(const Dims& d, const Rotary& r, bool fused) {
  SCOPED_TRACE(std::string(r.interleaved ? "interleaved" : "rotate_half") + " rotary_dim " +
               std::to_string(r.rotary_dim) + (fused ? " fused" : " separate") +
               " KVH=" + std::to_string(d.KVH));
  ModelRun run(rope_attention_config(d, r, fused),
               std::vector<int64_t>{static_cast<int64_t>(d.B), static_cast<int64_t>(d.S),
                                    static_cast<int64_t>(d.D)});
  sharpen(run);
  Matrix x = input(d.B * d.S * d.D);
  const std::string p = "qkv.input_linear.";
  const size_t rows = d.B * d.S, qd = d.H * d.Dh, kvd = d.KVH * d.Dh;
  Matrix q, k, v;
  if (fused) {
    Matrix b = run.param(p + "bias");
    Matrix all = linear_ref(x, run.param(p + "weight"), &b, rows, d.D, qd + 2 * kvd);
    for (size_t i = 0; i < rows; ++i) {
      const double* a = &all[i * (qd + 2 * kvd)];
      q.insert(q.end(), a, a + qd);
      k.insert(k.end(), a + qd, a + qd + kvd);
      v.insert(v.end(), a + qd + kvd, a + qd + 2 * kvd);
    }
  } else {
    Matrix qb = run.param(p + "q_bias"), kb = run.param(p + "k_bias"), vb = run.param(p + "v_bias");
    q = linear_ref(x, run.param(p + "q_weight"), &qb, rows, d.D, qd);
    k = linear_ref(x, run.param(p + "k_weight"), &kb, rows, d.D, kvd);
    v = linear_ref(x, run.param(p + "v_weight"), &vb, rows, d.D, kvd);
  }
  Matrix ob = run.param("o_bias");
  Matrix want = attention_ref(d, rotate_ref(q, d.B, d.S, d.H, d.Dh, r),
                              rotate_ref(k, d.B, d.S, d.KVH, d.Dh, r), v, run.param("o_weight"),
                              &ob, true, nullptr);
  expect_close(run({x}), want, 2e-5);
  // Without the rotation the attention is another one: the check above can tell them apart.
  Matrix plain = attention_ref(d, q, k, v, run.param("o_weight"), &ob, true, nullptr);
  EXPECT_GT(max_abs_error(want, plain), 1e-2);
}

TEST(RopeAttention, CausalMultiheadMatchesReference) {
  Dims d{2, 7, 32, 4, 4, 8};
  check_attention(d, {8, false, 10000.0, 0}, true);
  check_attention(d, {8, true, 10000.0, 0}, false);
  check_attention(d, {4, false, 10000.0, 0}, false); // partial
}

TEST(RopeAttention, CausalGroupedQueryMatchesReference) {
  Dims d{1, 6, 32, 4, 2, 8};
  check_attention(d, {8, false, 10000.0, 0}, false);
  check_attention(d, {4, true, 10000.0, 0}, true);
}

TEST(RopeAttention, ShiftingEveryPositionLeavesTheOutputUnchanged) {
  Dims d{1, 6, 32, 4, 2, 8};
  Matrix x = input(d.S * d.D);
  const std::vector<int64_t> shape = {1, 6, 32};
  ModelRun at0(rope_attention_config(d, {8, false, 10000.0, 0}, false), shape);
  ModelRun at500(rope_attention_config(d, {8, false, 10000.0, 500}, false), shape);
  sharpen(at0);
  sharpen(at500);
  expect_close(at500({x}), at0({x}), 2e-5);
  // q itself is rotated by other angles.
  json qkv0 = rope_attention_config(d, {8, false, 10000.0, 0}, false)["qkv"];
  json qkv500 = rope_attention_config(d, {8, false, 10000.0, 500}, false)["qkv"];
  ModelRun q0(qkv0, shape), q500(qkv500, shape);
  EXPECT_GT(max_abs_error(run_all(q0, {x})[0], run_all(q500, {x})[0]), 0.05);
}

} // namespace
} // namespace mt
