// Prepacked weights (ABI 1.8, components.h): a matmul whose weights are a param takes them in
// oneDNN's own layout, packed once (PluginModule::packed_layout / pack / run_packed); where
// oneDNN has no blocked layout for them, row-major or, for widths whose rows would alias in the
// caches, K-contiguous (weights already so stay as given).
// Checked against the reference interpreter: a linear layer at one row and at several, the fused
// QKV projection whose three slices of one weight become one packed copy, and what is not packed
// (activations, the bias, a weight read by an epilogue too); an argument flagged packed that
// the module did not offer is refused. With -fpmath=bf16 the packed weights are bf16, the
// results within bf16's error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/layer_registry.h"
#include "core/ir/parser.h"
#include "core/model/config_json.h"
#include "core/plugin/plugin_error.h"
#include "onednn_test_util.h"

namespace mt::onednn_test {
namespace {

// Checks a packed run's output `got` against the interpreter's `ref`; `f`'s packed run
// computed in f32 unless `bf16`.
using PackedCheck =
    std::function<void(const Function& f, size_t output, const NDArray& got, const NDArray& ref)>;

void within_f32(const Function& f, size_t o, const NDArray& got, const NDArray& ref) {
  std::string why;
  EXPECT_TRUE(allclose(got, ref, 1e-4, 1e-4, &why))
      << f.name << " output " << f.params[o]->name << ": " << why;
}

// Runs `f` built by `t` with every packable param packed; checks the outputs against the
// interpreter (with `check`) and returns the params that were packed with their layouts.
std::vector<std::pair<size_t, PluginModule::PackedLayout>>
check_packed(const Function& f, PluginTarget& t = target(), const PackedCheck& check = within_f32) {
  std::unique_ptr<PluginModule> m = t.build(f);
  std::vector<NDArray> ref = make_args(f), got = make_args(f);
  interpret(f, ptrs(ref));
  std::vector<bool> outs = f.output_mask();
  std::vector<std::pair<size_t, PluginModule::PackedLayout>> packed;
  std::vector<uint8_t> flags(f.params.size(), 0);
  std::vector<std::vector<std::byte>> copies;
  std::vector<NDArray> args = got;
  for (size_t i = 0; i < f.params.size(); ++i) {
    std::optional<PluginModule::PackedLayout> l = m->packed_layout(i);
    if (!l) continue;
    EXPECT_FALSE(outs[i]) << "an output offered packed";
    EXPECT_GE(l->bytes, got[i].nbytes()) << f.params[i]->name;
    EXPECT_EQ(m->packed_layout(i)->key, l->key) << "the key names the layout: the same again";
    copies.emplace_back(l->bytes + 64);
    auto base = reinterpret_cast<uintptr_t>(copies.back().data());
    void* dst = reinterpret_cast<void*>((base + 63) / 64 * 64);
    m->pack(i, got[i], dst);
    args[i] = NDArray(got[i].dtype(), got[i].shape(), dst);
    flags[i] = 1;
    packed.push_back({i, *l});
  }
  m->run_packed(ptrs(args), flags);
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o]) check(f, o, args[o], ref[o]);
  // Plain calls still work on the same module (it keeps no state between calls), in f32.
  std::string why;
  std::vector<NDArray> plain = make_args(f);
  m->run(ptrs(plain));
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!outs[o]) continue;
    EXPECT_TRUE(allclose(plain[o], ref[o], 1e-4, 1e-4, &why)) << why;
  }
  return packed;
}

// A linear layer of NOUT outputs whose weight is W (K_N) or its transpose, a Hugging Face
// nn.Linear weight as stored (N_K).
const char* kLinear =
    R"(func linear(x: f32[ROWS, 24], w: f32[WDIMS], b: f32[NOUT], out: f32[ROWS, NOUT]) {
  buffer acc: f32[ROWS, NOUT]
  for i in ROWS {
    for n in NOUT {
      for k in 24 {
        block acc(vi: S[ROWS] = i, vn: S[NOUT] = n, vk: R[24] = k) {
          init { acc[vi, vn] = 0f32 }
          acc[vi, vn] = acc[vi, vn] + x[vi, vk] * w[WINDEX]
        }
      }
    }
  }
  for i in ROWS {
    for n in NOUT {
      block out(vi: S[ROWS] = i, vn: S[NOUT] = n) {
        out[vi, vn] = acc[vi, vn] + b[vn]
      }
    }
  }
})";

enum class Weight { KN, NK };

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at; (at = text.find(from)) != std::string::npos;)
    text.replace(at, from.size(), to);
  return text;
}

Function linear(int rows, Weight w = Weight::NK, int n = 40) {
  std::string text = replaced(kLinear, "ROWS", std::to_string(rows));
  text = replaced(text, "WDIMS", w == Weight::KN ? "24, NOUT" : "NOUT, 24");
  text = replaced(text, "WINDEX", w == Weight::KN ? "vk, vn" : "vn, vk");
  return parse_function(replaced(text, "NOUT", std::to_string(n)));
}

// Where oneDNN has no blocked layout for a matmul's weights, the plugin takes them row-major
// (K_N), or K-contiguous (N_K) where a row-major row would be a multiple of 2 KB (512 outputs
// here) in a product of 64 rows or more (dnnl_module.cpp's offer_packed). A packed key without
// blocks names those strides.
bool plain_layout(const std::string& key) {
  return key.find(" blocks [] ") != std::string::npos;
}

// The weight packed on any CPU: N_K of 40 outputs, K_N of 512 at 64 rows, each packed into the
// other where oneDNN does not block them.
TEST(OnednnPackedWeights, ALinearTakesItsWeightPacked) {
  struct Case {
    int rows, n;
    Weight w;
    const char* plain_strides;
  };
  for (Case c :
       {Case{1, 40, Weight::NK, " strides [40,1] "}, Case{6, 40, Weight::NK, " strides [40,1] "},
        Case{64, 512, Weight::KN, " strides [1,24] "}}) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + ", " + std::to_string(c.n) + " outputs");
    auto packed = check_packed(linear(c.rows, c.w, c.n));
    ASSERT_EQ(packed.size(), 1u) << "the weight, not x or the bias";
    EXPECT_EQ(packed[0].first, 1u);
    const std::string& key = packed[0].second.key;
    EXPECT_EQ(key.rfind("onednn view [", 0), 0u) << key;
    if (plain_layout(key)) {
      EXPECT_NE(key.find(c.plain_strides), std::string::npos) << key;
    }
  }
}

// A weight already in the plain layout the plugin wants for its width and rows is used as given
// where oneDNN would not block it, and packed where it would: the same computation, checked against
// the interpreter either way.
TEST(OnednnPackedWeights, WeightsInTheWantedPlainLayoutStayAsGiven) {
  struct Case {
    int rows, n;
    Weight wanted, other;
  };
  for (Case c : {Case{6, 40, Weight::KN, Weight::NK}, Case{6, 512, Weight::KN, Weight::NK},
                 Case{64, 512, Weight::NK, Weight::KN}}) {
    SCOPED_TRACE(std::to_string(c.rows) + " rows, " + std::to_string(c.n) + " outputs");
    auto repacked = check_packed(linear(c.rows, c.other, c.n));
    ASSERT_EQ(repacked.size(), 1u);
    auto given = check_packed(linear(c.rows, c.wanted, c.n));
    if (plain_layout(repacked[0].second.key)) {
      EXPECT_TRUE(given.empty()) << "packed again into the layout it has: " << given[0].second.key;
    } else {
      EXPECT_EQ(given.size(), 1u) << "oneDNN blocks one layout but not the other";
    }
  }
}

// The fused QKV projection's kernel of a small attention layer (3 heads, width 24).
std::optional<Function> fused_qkv() {
  PluginHost& h = host();
  const PluginRecord& rec = h.load(MT_STD_LAYERS_PLUGIN);
  if (!rec.loaded()) throw std::runtime_error("std_layers refused: " + rec.message);
  ConfigRegistry layers = layer_config_registry(h);
  Config c = layers.make("std.MultiheadAttention");
  c.set("input_dim", 24).set("num_heads", 3).set("causal", true);
  c.set("qkv", layers.make("std.FusedQKVLinear"));
  ModelGraph g = instantiate_model(h, c, {te::placeholder({2, 5, 24}, DType::f32(), "x")});
  for (const FusedGroup& grp : fuse(g.outputs))
    if (grp.name == "fused_qkv_proj") return grp.func;
  return std::nullopt;
}

TEST(OnednnPackedWeights, FusedQkvSlicesAreOnePackedCopy) {
  std::optional<Function> f = fused_qkv();
  ASSERT_TRUE(f) << "no fused_qkv_proj kernel";
  auto packed = check_packed(*f);
  ASSERT_EQ(packed.size(), 1u);
  const std::string& key = packed[0].second.key;
  size_t views = 0;
  for (size_t at = 0; (at = key.find("view [", at)) != std::string::npos; ++at)
    ++views;
  EXPECT_EQ(views, 3u) << "q, k and v: three slices of the weight in one copy: " << key;
}

// out = x w + w: the weight is also the epilogue's operand, which reads it as declared.
TEST(OnednnPackedWeights, AWeightTheEpilogueReadsTooIsNotPacked) {
  Function f = parse_function(R"(func twice(x: f32[4, 4], w: f32[4, 4], out: f32[4, 4]) {
  buffer acc: f32[4, 4]
  for i in 4 {
    for n in 4 {
      for k in 4 {
        block acc(vi: S[4] = i, vn: S[4] = n, vk: R[4] = k) {
          init { acc[vi, vn] = 0f32 }
          acc[vi, vn] = acc[vi, vn] + x[vi, vk] * w[vk, vn]
        }
      }
    }
  }
  for i in 4 {
    for n in 4 {
      block out(vi: S[4] = i, vn: S[4] = n) {
        out[vi, vn] = acc[vi, vn] + w[vi, vn]
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  EXPECT_TRUE(check_packed(f).empty());
}

PluginTarget& bf16_target() {
  static std::unique_ptr<PluginTarget> t =
      host().create_target("onednn.cpu", R"({"log": false, "target": "onednn -fpmath=bf16"})");
  return *t;
}

bool computes_in_bf16(PluginTarget& t) {
  return t.describe_device().find("\"fpmath\": \"bf16\"") != std::string::npos;
}

// A product of inputs rounded to bf16 (8 significant bits, unit roundoff 2^-8) is within
// 2^-7 of the exact one, relative to |x| |w|; accumulated in f32. So each output is within
// 2^-7 of the sum of |x| |w| (+ |bias|): the function interpreted on the inputs' magnitudes.
void within_bf16(const Function& f, size_t o, const NDArray& got, const NDArray& ref) {
  std::vector<NDArray> mag = make_args(f);
  std::vector<bool> outs = f.output_mask();
  for (size_t i = 0; i < mag.size(); ++i)
    if (!outs[i])
      for (int64_t e = 0; e < mag[i].num_elements(); ++e)
        mag[i].data_as<float>()[e] = std::fabs(mag[i].data_as<float>()[e]);
  interpret(f, ptrs(mag));
  const float *g = got.data_as<float>(), *r = ref.data_as<float>(), *a = mag[o].data_as<float>();
  int64_t bad = 0;
  for (int64_t e = 0; e < got.num_elements(); ++e)
    if (!(std::fabs(double(g[e]) - r[e]) <= 1.01 * std::ldexp(double(a[e]), -7) + 1e-6)) {
      if (bad++ < 3)
        ADD_FAILURE() << f.name << " element " << e << ": " << g[e] << " against " << r[e]
                      << ", beyond bf16's bound " << std::ldexp(double(a[e]), -7);
    }
  EXPECT_EQ(bad, 0) << f.name << ": elements beyond bf16's error bound";
}

// -fpmath=bf16: the weights are packed in bf16 (half the bytes) and the products are within
// bf16's error; where the CPU has no bf16 instructions the target says so and stays f32.
TEST(OnednnPackedWeights, Bf16FpmathPacksTheWeightsInBf16) {
  const bool bf16 = computes_in_bf16(bf16_target());
  for (int rows : {1, 6}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    Function f = linear(rows);
    auto packed = check_packed(f, bf16_target(), bf16 ? within_bf16 : within_f32);
    ASSERT_EQ(packed.size(), 1u);
    const PluginModule::PackedLayout& l = packed[0].second;
    if (bf16) {
      EXPECT_NE(l.key.find(" as bf16 "), std::string::npos) << l.key;
      auto f32 = target().build(f)->packed_layout(1);
      ASSERT_TRUE(f32);
      EXPECT_LT(l.bytes, f32->bytes) << "bf16: fewer bytes than the f32 packing";
      EXPECT_NE(f32->key, l.key) << "an f32 packing is never shared with a bf16 one";
    } else {
      EXPECT_NE(l.key.find(" as f32 "), std::string::npos) << l.key;
    }
  }
}

TEST(OnednnPackedWeights, Bf16FpmathReachesTheFusedQkvSlices) {
  if (!computes_in_bf16(bf16_target()))
    GTEST_SKIP() << "no bf16 instructions here (Bf16FpmathPacksTheWeightsInBf16 checks the "
                    "f32 fallback)";
  std::optional<Function> f = fused_qkv();
  ASSERT_TRUE(f) << "no fused_qkv_proj kernel";
  auto packed = check_packed(*f, bf16_target(), within_bf16);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_NE(packed[0].second.key.find(" as bf16 "), std::string::npos) << packed[0].second.key;
}

TEST(OnednnPackedWeights, AnUnknownOptionIsRefusedByName) {
  try {
    host().create_target("onednn.cpu", R"({"target": "onednn -fpmath=fp8"})");
    FAIL() << "-fpmath=fp8 was taken";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option '-fpmath=fp8'"), std::string::npos)
        << e.what();
  }
}

TEST(OnednnPackedWeights, AnArgumentFlaggedPackedThatWasNotOfferedIsRefused) {
  Function f = linear(3);
  std::unique_ptr<PluginModule> m = target().build(f);
  std::vector<NDArray> args = make_args(f);
  std::vector<uint8_t> flags = {1, 0, 0, 0}; // x: an activation
  try {
    m->run_packed(ptrs(args), flags);
    FAIL() << "a packed x was taken";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'x') given packed"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace mt::onednn_test
