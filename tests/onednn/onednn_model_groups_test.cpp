// The kernels the fusion pass (core/graph/fusion.h) makes of the standard layers, built by
// onednn.cpu and checked against the reference interpreter on every output: linear layers on
// [batch, seq, in] (rows collapsed into one M) with bias + GELU (tanh and erf) or bias +
// residual, the tied LM head (a transposed weight), a fused QKV projection (three outputs,
// slices of one product), attention scores per batch and head (heads read in place from
// [B, S, H * D]) with scale, causal and padding masks, and the context written back into
// [B, S, H * D]; then every kernel of a small GPT-2- and BERT-shaped model from the shipped
// configs, and a decode step's mask (a positions tensor against the key index). What oneDNN
// cannot express stays refused: reduction digits that do not collapse, an operand broadcast
// along part of the collapsed rows, a select whose fill is a tensor, a mask comparing two
// tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/graph/fusion.h"
#include "core/graph/layer_registry.h"
#include "core/ir/parser.h"
#include "core/model/config_json.h"
#include "onednn_test_util.h"

namespace mt::onednn_test {
namespace {

using json = nlohmann::json;

// The standard layers, loaded into the tests' plugin host, as config kinds.
const ConfigRegistry& layers() {
  static ConfigRegistry r = [] {
    const PluginRecord& rec = host().load(MT_STD_LAYERS_PLUGIN);
    if (!rec.loaded()) throw std::runtime_error("std_layers plugin refused: " + rec.message);
    return layer_config_registry(host());
  }();
  return r;
}

std::vector<FusedGroup> kernels(const Config& c, const std::vector<te::Tensor>& inputs) {
  ModelGraph g = instantiate_model(host(), c, inputs);
  return fuse(g.outputs);
}

const FusedGroup& kernel(const std::vector<FusedGroup>& groups, const std::string& name) {
  for (const FusedGroup& g : groups)
    if (g.name == name) return g;
  throw std::logic_error("no kernel " + name);
}

// What the last build reported: family, plan and oneDNN's implementation.
struct LastBuild {
  std::string family, plan, implementation;
};
LastBuild last_build() {
  json d = json::parse(target().describe_device());
  return {d["last_build"]["family"], d["last_build"]["plan"], d["last_build"]["implementation"]};
}

// Offered, built and equal to the interpreter; returns the plan.
std::string check_kernel(const FusedGroup& g, const std::string& family) {
  std::string why;
  EXPECT_TRUE(offered(g.func, &why)) << g.name << ": " << why;
  if (!why.empty()) return "";
  expect_matches_reference(g.func);
  LastBuild b = last_build();
  EXPECT_EQ(b.family, family) << g.name << ": " << b.plan;
  // Strided heads and mask tables keep oneDNN on an optimised kernel.
  EXPECT_NE(b.implementation.rfind("ref", 0), 0u) << g.name << ": " << b.implementation;
  std::printf("  %s -> %s %s [%s]\n", g.name.c_str(), b.family.c_str(), b.plan.c_str(),
              b.implementation.c_str());
  return b.plan;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at; (at = text.find(from)) != std::string::npos;)
    text.replace(at, from.size(), to);
  return text;
}

te::Tensor f32_input(std::vector<int64_t> shape, const char* name) {
  return te::placeholder(std::move(shape), DType::f32(), name);
}

TEST(OnednnModelKernels, FeedForwardLinearsWithBiasGeluAndResidual) {
  for (auto [act, onednn_name] : {std::pair{"gelu_tanh", "gelu_tanh"}, {"gelu", "gelu_erf"}}) {
    Config c = layers().make("std.TransformerFeedForwardLayer");
    c.set("input_dim", 24).set("hidden_dim", 40).set("activation", std::string(act));
    auto groups = kernels(c, {f32_input({2, 5, 24}, "x")});
    // [2, 5, 24] rows collapse: one [10, 24] x [24, 40] product, the weight read as [K, N]
    // through strides from its [40, 24] storage.
    EXPECT_EQ(check_kernel(kernel(groups, "fused_linear"), "matmul"),
              std::string("[10,24] x [24,40] -> [10,40] +bias +") + onednn_name);
    EXPECT_EQ(check_kernel(kernel(groups, "fused_linear_1"), "matmul"),
              "[10,40] x [40,24] -> [10,24] +bias +add");
  }
}

// SwiGLU (Llama): the gate's product with silu and the product with the up projection as
// post-ops (eltwise swish, binary mul), the down projection with the residual.
TEST(OnednnModelKernels, SwiGluGateWithSiluTimesTheUpProjection) {
  Config c = layers().make("std.TransformerFeedForwardLayer");
  c.set("input_dim", 24).set("hidden_dim", 40).set("activation", std::string("silu"));
  c.set("linear1_gate", layers().make("std.Linear")).set("linear1_gate.bias", false);
  c.set("linear1.bias", false).set("linear2.bias", false);
  auto groups = kernels(c, {f32_input({2, 5, 24}, "x")});
  EXPECT_EQ(check_kernel(kernel(groups, "fused_linear"), "matmul"), "[10,24] x [24,40] -> [10,40]");
  EXPECT_EQ(check_kernel(kernel(groups, "fused_linear_1"), "matmul"),
            "[10,24] x [24,40] -> [10,40] +swish +mul");
  EXPECT_EQ(check_kernel(kernel(groups, "fused_linear_2"), "matmul"),
            "[10,40] x [40,24] -> [10,24] +add");
}

TEST(OnednnModelKernels, TiedLmHeadReadsTheEmbeddingTransposed) {
  Config c = layers().make("std.Decoder");
  c.set("vocab_size", 37)
      .set("dim", 16)
      .set("max_positions", 8)
      .set("transformer.num_layers", 1)
      .set("transformer.layer.self_attention.attention.num_heads", 2)
      .set("transformer.layer.feed_forward.hidden_dim", 32);
  auto groups = kernels(c, {te::placeholder({2, 6}, DType::i32(), "ids")});
  EXPECT_EQ(check_kernel(kernel(groups, "fused_lm_head"), "matmul"),
            "[12,16] x [16,37] -> [12,37]");
}

// GPT-2's attention: fused QKV, causal; BERT's: separate projections, padding mask.
TEST(OnednnModelKernels, AttentionProjectionsScoresAndContext) {
  for (bool gpt : {true, false}) {
    SCOPED_TRACE(gpt ? "fused qkv, causal" : "separate qkv, padding mask");
    Config c = layers().make("std.MultiheadAttention");
    c.set("input_dim", 24).set("num_heads", 3).set("causal", gpt);
    if (gpt) c.set("qkv", layers().make("std.FusedQKVLinear"));
    std::vector<te::Tensor> in = {f32_input({2, 5, 24}, "x")};
    if (!gpt) in.push_back(f32_input({2, 5}, "mask"));
    auto groups = kernels(c, in);
    if (gpt) {
      EXPECT_EQ(check_kernel(kernel(groups, "fused_qkv_proj"), "matmul"),
                "3 outputs: [10,24] x [24,24] -> [10,24] +bias; [10,24] x [24,24] -> [10,24] "
                "+bias; [10,24] x [24,24] -> [10,24] +bias");
    } else {
      for (const char* n : {"fused_q_proj", "fused_k_proj", "fused_v_proj"})
        EXPECT_EQ(check_kernel(kernel(groups, n), "matmul"), "[10,24] x [24,24] -> [10,24] +bias");
    }
    // Per (batch, head): [5, 8] x [8, 5], q and k read in place from [2, 5, 24]; the scale,
    // then one select holding the causal or padding condition.
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_scores"), "batch_matmul"),
              "[2,3,5,8] x [2,3,8,5] -> [2,3,5,5] +linear +select");
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_max"), "softmax"), "[2,3,5,5] axis 3");
    // probs [2, 3, 5, 5] x v (in place) -> context written into [2, 5, 24].
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_context"), "batch_matmul"),
              "[2,3,5,5] x [2,3,5,8] -> [2,3,5,8]");
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_out"), "matmul"),
              "[10,24] x [24,24] -> [10,24] +bias");
  }
}

// Grouped-query attention (Llama's): 6 query heads share 2 key/value heads, read in place
// from [B, S, 2 * D]. The three query heads of a key head are rows of the scores that do not
// collapse with the positions (q is [B, S, H * D]): they become a batch dim along which k and
// v are broadcast, and the key head is split off the query head (h // 3) as a digit of its own.
TEST(OnednnModelKernels, GroupedQueryAttentionScoresAndContext) {
  Config c = layers().make("std.MultiheadAttention");
  c.set("input_dim", 48).set("num_heads", 6).set("num_kv_heads", 2).set("causal", true);
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    auto groups = kernels(c, {f32_input({batch, 5, 48}, "x")});
    std::string b = batch > 1 ? "2," : "";
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_scores"), "batch_matmul"),
              "[" + b + "2,3,5,8] x [" + b + "2,1,8,5] -> [" + b + "2,3,5,5] +linear +select");
    EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_context"), "batch_matmul"),
              "[" + b + "2,3,5,5] x [" + b + "2,1,5,8] -> [" + b + "2,3,5,8]");
  }
}

// Both masks of a decoder fed a padding mask: one select with two conditions. At batch 1 (the
// batch dim gone), the causal table [1, S, S] is one oneDNN's kernels do not broadcast over the
// heads: it is made full size.
TEST(OnednnModelKernels, CausalAndPaddingMasksTogether) {
  Config c = layers().make("std.MultiheadAttention");
  c.set("input_dim", 16).set("num_heads", 2).set("causal", true);
  auto groups = kernels(c, {f32_input({3, 4, 16}, "x"), f32_input({3, 4}, "mask")});
  EXPECT_EQ(check_kernel(kernel(groups, "fused_attn_scores"), "batch_matmul"),
            "[3,2,4,8] x [3,2,8,4] -> [3,2,4,4] +linear +select");
  for (bool mask : {false, true}) {
    std::vector<te::Tensor> in = {f32_input({1, 6, 16}, "x")};
    if (mask) in.push_back(f32_input({1, 6}, "mask"));
    EXPECT_EQ(check_kernel(kernel(kernels(c, in), "fused_attn_scores"), "batch_matmul"),
              "[2,6,8] x [2,8,6] -> [2,6,6] +linear +select");
  }
}

// Heads read with strides and offsets from other layouts: q and k as slices of one
// [B, S, 3 * H * D] projection, and v as [B, S, H, D].
TEST(OnednnModelKernels, HeadsFromPackedAndFourDimensionalLayouts) {
  Function scores = parse_function(R"(func packed(qkv: f32[2, 4, 48], out: f32[2, 2, 4, 4]) {
  buffer acc: f32[2, 2, 4, 4]
  for b in 2 {
    for h in 2 {
      for i in 4 {
        for j in 4 {
          for d in 8 {
            block acc(vb: S[2] = b, vh: S[2] = h, vi: S[4] = i, vj: S[4] = j, vd: R[8] = d) {
              init { acc[vb, vh, vi, vj] = 0f32 }
              acc[vb, vh, vi, vj] = acc[vb, vh, vi, vj] + qkv[vb, vi, vh * 8 + vd] * qkv[vb, vj, vh * 8 + vd + 16]
            }
          }
        }
      }
    }
  }
  for b in 2 {
    for h in 2 {
      for i in 4 {
        for j in 4 {
          block masked(vb: S[2] = b, vh: S[2] = h, vi: S[4] = i, vj: S[4] = j) {
            out[vb, vh, vi, vj] = select(vj <= vi, acc[vb, vh, vi, vj] * 0.125f32, -1e+30f32)
          }
        }
      }
    }
  }
})");
  ASSERT_TRUE(offered(scores));
  expect_matches_reference(scores);
  EXPECT_EQ(last_build().plan, "[2,2,4,8] x [2,2,8,4] -> [2,2,4,4] +linear +select");
  Function context =
      parse_function(R"(func ctx(p: f32[2, 2, 4, 4], v: f32[2, 4, 2, 8], out: f32[2, 4, 16]) {
  for b in 2 {
    for i in 4 {
      for c in 16 {
        for j in 4 {
          block out(vb: S[2] = b, vi: S[4] = i, vc: S[16] = c, vj: R[4] = j) {
            init { out[vb, vi, vc] = 0f32 }
            out[vb, vi, vc] = out[vb, vi, vc] + p[vb, vc // 8, vi, vj] * v[vb, vj, vc // 8, vc % 8]
          }
        }
      }
    }
  }
})");
  ASSERT_TRUE(offered(context));
  expect_matches_reference(context);
  EXPECT_EQ(last_build().plan, "[2,2,4,4] x [2,2,4,8] -> [2,2,4,8]");
}

// Every kernel of a model from a shipped config, made small: all but the embedding gather
// (integer ids: not an f32 operator; the first norm is fused with it) are offered and match
// the interpreter.
void check_model(const std::string& file, bool with_mask) {
  Config c = load_config_file(layers(), std::string(METATUNE_SOURCE_DIR) + "/configs/" + file);
  c.set("vocab_size", 45)
      .set("dim", 32)
      .set("transformer.num_layers", 2)
      .set("transformer.layer.self_attention.attention.num_heads", 4)
      .set("transformer.layer.feed_forward.hidden_dim", 48);
  std::vector<te::Tensor> in = {te::placeholder({2, 7}, DType::i32(), "ids")};
  if (with_mask) in.push_back(f32_input({2, 7}, "mask"));
  int built = 0;
  for (const FusedGroup& g : kernels(c, in)) {
    std::string why;
    bool ids = std::any_of(g.func.params.begin(), g.func.params.end(),
                           [](const Buffer& b) { return b->dtype.is_int(); });
    if (ids) {
      EXPECT_FALSE(offered(g.func, &why)) << g.name;
      continue;
    }
    ASSERT_TRUE(offered(g.func, &why)) << g.name << ": " << why;
    expect_matches_reference(g.func);
    ++built;
  }
  std::printf("  %s: %d kernels built by onednn.cpu\n", file.c_str(), built);
  EXPECT_GT(built, 10);
}

TEST(OnednnModelKernels, EveryKernelOfASmallGpt2) {
  check_model("gpt2-small.json", false);
}

TEST(OnednnModelKernels, EveryKernelOfASmallBert) {
  check_model("bert-base.json", true);
}

void expect_refused(const char* text, const std::string& reason) {
  Function f = parse_function(text);
  std::string why;
  EXPECT_FALSE(offered(f, &why)) << f.name << " was offered";
  EXPECT_NE(why.find(reason), std::string::npos) << why;
  try {
    target().build(f);
    ADD_FAILURE() << f.name << " was built";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
  }
}

// out[s, b, n] = x[b, s, k] w[n, k]: rows (s, b) contiguous in the output, not in x. s stays
// M (the larger), b is a batch dim along which w is broadcast.
TEST(OnednnModelKernels, RowsThatDoNotCollapseBecomeBatchDims) {
  Function f = parse_function(R"(func rows(x: f32[2, 3, 4], w: f32[5, 4], out: f32[3, 2, 5]) {
  for i in 3 {
    for j in 2 {
      for n in 5 {
        for k in 4 {
          block out(vi: S[3] = i, vj: S[2] = j, vn: S[5] = n, vk: R[4] = k) {
            init { out[vi, vj, vn] = 0f32 }
            out[vi, vj, vn] = out[vi, vj, vn] + x[vj, vi, vk] * w[vn, vk]
          }
        }
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
  EXPECT_EQ(last_build().plan, "[2,3,4] x [1,4,5] -> [2,3,5]");
}

// out[i, n] = sum over (a, b) of x[i, a, b] w[n, b, a]: the two reduction digits nest one
// way in x, the other in w -- no one K.
TEST(OnednnModelKernelsRefused, ReductionThatDoesNotCollapse) {
  expect_refused(R"(func red(x: f32[3, 2, 4], w: f32[5, 4, 2], out: f32[3, 5]) {
  for i in 3 {
    for n in 5 {
      for a in 2 {
        for b in 4 {
          block out(vi: S[3] = i, vn: S[5] = n, va: R[2] = a, vb: R[4] = b) {
            init { out[vi, vn] = 0f32 }
            out[vi, vn] = out[vi, vn] + x[vi, va, vb] * w[vn, vb, va]
          }
        }
      }
    }
  }
})",
                 "do not collapse");
}

// A residual r[s, n] added to out[b, s, n]: broadcast along b only, part of the rows.
TEST(OnednnModelKernelsRefused, OperandBroadcastAlongPartOfTheRows) {
  expect_refused(R"(func part(x: f32[2, 3, 4], w: f32[5, 4], r: f32[3, 5], out: f32[2, 3, 5]) {
  buffer acc: f32[2, 3, 5]
  for i in 2 {
    for j in 3 {
      for n in 5 {
        for k in 4 {
          block acc(vi: S[2] = i, vj: S[3] = j, vn: S[5] = n, vk: R[4] = k) {
            init { acc[vi, vj, vn] = 0f32 }
            acc[vi, vj, vn] = acc[vi, vj, vn] + x[vi, vj, vk] * w[vn, vk]
          }
        }
      }
    }
  }
  for i in 2 {
    for j in 3 {
      for n in 5 {
        block res(vi: S[2] = i, vj: S[3] = j, vn: S[5] = n) {
          out[vi, vj, vn] = acc[vi, vj, vn] + r[vj, vn]
        }
      }
    }
  }
})",
                 "part of a collapsed dim");
}

// Masks oneDNN has no post-op for: a fill read from a tensor; two tensors compared; a float
// tensor plus a constant compared (its rounding is not the comparison's).
TEST(OnednnModelKernelsRefused, MasksOutsideThePostOps) {
  const char* scores =
      R"(func masked(q: f32[4, 8], k: f32[4, 8], m: f32[4], y: f32[4, 4], out: f32[4, 4]) {
  buffer acc: f32[4, 4]
  for i in 4 {
    for j in 4 {
      for d in 8 {
        block acc(vi: S[4] = i, vj: S[4] = j, vd: R[8] = d) {
          init { acc[vi, vj] = 0f32 }
          acc[vi, vj] = acc[vi, vj] + q[vi, vd] * k[vj, vd]
        }
      }
    }
  }
  for i in 4 {
    for j in 4 {
      block mask(vi: S[4] = i, vj: S[4] = j) {
        out[vi, vj] = MASKED
      }
    }
  }
})";
  auto with = [&](const std::string& masked) {
    std::string text = scores;
    text.replace(text.find("MASKED"), 6, masked);
    return text;
  };
  // The same kernel with a constant fill is offered (and right).
  Function ok = parse_function(with("select(m[vj] > 0.5f32, acc[vi, vj], -1e+30f32)"));
  ASSERT_TRUE(offered(ok));
  expect_matches_reference(ok);
  expect_refused(with("select(m[vj] > 0.5f32, acc[vi, vj], y[vi, vj])").c_str(),
                 "not a chain of oneDNN eltwise, binary or select steps");
  expect_refused(with("select(m[vj] > y[vi, vj], acc[vi, vj], -1e+30f32)").c_str(),
                 "not with a constant");
  expect_refused(with("select(m[vj] + 0.25f32 > 0.5f32, acc[vi, vj], -1e+30f32)").c_str(),
                 "adding a constant to a float tensor");
}

// A decode step's attention scores (the form std.Decoder's decode graph takes): one query row
// against a key cache, key l kept while l <= the query's position -- a tensor (i32) compared
// with an index, read on every call -- and, under a sliding window of 3, while
// l > position - 3. Grouped-query (4 heads on 2 key/value heads of 16, a cache of 8) and
// multi-head (2 heads of 8, a cache of 16, the tiny GPT's decode step). Checked at several
// positions, the masked keys exactly those outside the window.
const char* kDecodeScores =
    R"(func decode_scores(k: f32[1, CAP, KW], q: f32[1, 1, QW], positions: i32[1, 1], out: f32[1, H, 1, CAP]) {
  buffer acc: f32[1, H, 1, CAP]
  for i in 1 {
    for j in H {
      for t in 1 {
        for l in CAP {
          for d in D {
            block acc(vi: S[1] = i, vj: S[H] = j, vt: S[1] = t, vl: S[CAP] = l, vd: R[D] = d) {
              init { acc[vi, vj, vt, vl] = 0f32 }
              acc[vi, vj, vt, vl] = acc[vi, vj, vt, vl] + q[vi, vt, vj * D + vd] * k[vi, vl, KV * D + vd]
            }
          }
        }
      }
    }
  }
  for i in 1 {
    for j in H {
      for t in 1 {
        for l in CAP {
          block masked(vi: S[1] = i, vj: S[H] = j, vt: S[1] = t, vl: S[CAP] = l) {
            out[vi, vj, vt, vl] = select(SEEN, acc[vi, vj, vt, vl] * 0.25f32, -1e+30f32)
          }
        }
      }
    }
  }
})";

TEST(OnednnModelKernels, DecodeStepMaskComparesThePositionsTensorWithTheKeyIndex) {
  struct Shape {
    int heads, kv_heads, d, cap;
  };
  const std::string causal = "vl <= i64(positions[vi, vt])";
  for (Shape sh : {Shape{4, 2, 16, 8}, Shape{2, 2, 8, 16}})
    for (int window : {0, 3}) {
      SCOPED_TRACE(std::to_string(sh.heads) + " heads on " + std::to_string(sh.kv_heads) +
                   ", cache " + std::to_string(sh.cap) + ", window " + std::to_string(window));
      std::string seen = causal;
      if (window)
        seen = "(" + causal + ") && (vl > i64(positions[vi, vt]) - " + std::to_string(window) + ")";
      std::string text = replaced(kDecodeScores, "SEEN", seen);
      const int group = sh.heads / sh.kv_heads;
      text = replaced(text, "KV", group == 1 ? "vj" : "vj // " + std::to_string(group));
      text = replaced(text, "CAP", std::to_string(sh.cap));
      text = replaced(text, "KW", std::to_string(sh.kv_heads * sh.d));
      text = replaced(text, "QW", std::to_string(sh.heads * sh.d));
      text = replaced(text, "H", std::to_string(sh.heads));
      Function f = parse_function(replaced(text, "D", std::to_string(sh.d)));
      std::string why;
      ASSERT_TRUE(offered(f, &why)) << why;
      std::unique_ptr<PluginModule> m = target().build(f);
      LastBuild b = last_build();
      EXPECT_EQ(b.family, "batch_matmul") << b.plan;
      EXPECT_NE(b.implementation.rfind("ref", 0), 0u) << b.implementation;
      std::printf("  %s [%s]\n", b.plan.c_str(), b.implementation.c_str());
      for (int32_t pos : {0, 3, sh.cap - 1}) {
        SCOPED_TRACE("position " + std::to_string(pos));
        std::vector<NDArray> ref = make_args(f, 5 + pos), got = make_args(f, 5 + pos);
        ref[2].data_as<int32_t>()[0] = pos;
        got[2].data_as<int32_t>()[0] = pos;
        interpret(f, ptrs(ref));
        m->run(ptrs(got));
        EXPECT_TRUE(allclose(got[3], ref[3], 1e-4, 1e-4, &why)) << why;
        const float* o = got[3].data_as<float>();
        for (int h = 0; h < sh.heads; ++h)
          for (int l = 0; l < sh.cap; ++l)
            EXPECT_EQ(o[h * sh.cap + l] == -1e+30f, l > pos || (window && l <= pos - window))
                << "head " << h << " key " << l;
      }
    }
}

// A weight stored [K, N] (not transposed) with a 3-D input, and a position mask on the rows.
TEST(OnednnModelKernels, PlainWeightAndPositionMask) {
  Function f = parse_function(R"(func plain(x: f32[2, 3, 4], w: f32[4, 5], out: f32[2, 3, 5]) {
  buffer acc: f32[2, 3, 5]
  for i in 2 {
    for j in 3 {
      for n in 5 {
        for k in 4 {
          block acc(vi: S[2] = i, vj: S[3] = j, vn: S[5] = n, vk: R[4] = k) {
            init { acc[vi, vj, vn] = 0f32 }
            acc[vi, vj, vn] = acc[vi, vj, vn] + x[vi, vj, vk] * w[vk, vn]
          }
        }
      }
    }
  }
  for i in 2 {
    for j in 3 {
      for n in 5 {
        block keep(vi: S[2] = i, vj: S[3] = j, vn: S[5] = n) {
          out[vi, vj, vn] = select(vn < vj + 2, acc[vi, vj, vn] * 2f32, 0f32)
        }
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
  EXPECT_EQ(last_build().plan, "[6,4] x [4,5] -> [6,5] +linear +select");
}

} // namespace
} // namespace mt::onednn_test
