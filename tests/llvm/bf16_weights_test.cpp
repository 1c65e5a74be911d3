// -fpmath=bf16 on the llvm target (plugins/llvm_cpu/src/bf16_weights.h): a module offers the
// operands of its products -- directly, or through a copy into a local buffer -- packed in
// bf16, and with a weight handed over so it computes what the interpreter computes from that
// weight rounded to bf16 (NDArray's own rounding); a gathered table, a weight that is also
// added, and every param without -fpmath=bf16 are not offered; plain calls stay f32.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../function_args.h"
#include "core/ir/parser.h"
#include "core/lower/interpreter.h"
#include "core/plugin/plugin_error.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "llvm_plugin_host.h"

#ifdef METATUNE_LLVM_CPU_PLUGIN
namespace mt {
namespace {

using llvm_plugin::host;
using llvm_plugin::rounded_to_bf16;

// The llvm target with -fpmath=bf16.
PluginTarget& bf16_target() {
  static std::unique_ptr<PluginTarget> t =
      host().create_target("llvm.cpu", R"({"target": "llvm -fpmath=bf16", "num_threads": 2})");
  return *t;
}

// Inputs in [0, 4) (positive: every product moves when a weight is rounded).
std::vector<NDArray> make_args(const Function& f) {
  return test_args::make_args(f, 7, 0, 4);
}
using test_args::ptrs;

std::vector<size_t> offered(const PluginModule& m, const Function& f) {
  std::vector<size_t> out;
  for (size_t i = 0; i < f.params.size(); ++i)
    if (m.packed_layout(i)) out.push_back(i);
  return out;
}

// Runs `f` with param `weight` packed in bf16; its output equals the interpreter's on the
// weight rounded to bf16 (f32 arithmetic otherwise), and differs from the f32 result.
void expect_computes_with_rounded(const Function& f, size_t weight) {
  std::unique_ptr<PluginModule> m = bf16_target().build(f);
  std::optional<PluginModule::PackedLayout> l = m->packed_layout(weight);
  ASSERT_TRUE(l) << f.params[weight]->name << " not offered";
  std::vector<NDArray> args = make_args(f);
  EXPECT_EQ(l->bytes, args[weight].nbytes() / 2);
  std::vector<uint16_t> packed(l->bytes / 2);
  m->pack(weight, args[weight], packed.data());

  std::vector<NDArray> f32 = args, rounded = args;
  rounded[weight] = rounded_to_bf16(args[weight]);
  interpret(f, ptrs(f32));
  interpret(f, ptrs(rounded));

  std::vector<NDArray> got = args;
  got[weight] = NDArray(args[weight].dtype(), args[weight].shape(), packed.data());
  std::vector<uint8_t> flags(f.params.size(), 0);
  flags[weight] = 1;
  m->run_packed(ptrs(got), flags);
  const size_t o = f.params.size() - 1;
  std::string why;
  EXPECT_TRUE(allclose(got[o], rounded[o], 1e-5, 1e-5, &why)) << f.name << ": " << why;
  double moved = 0;
  for (int64_t i = 0; i < got[o].num_elements(); ++i)
    moved = std::max(moved, std::fabs(got[o].get_double(i) - f32[o].get_double(i)));
  EXPECT_GT(moved, 1e-6) << f.name << ": the packed run computed with the f32 weight";

  // The same module's plain calls read the weight as declared.
  std::vector<NDArray> plain = args;
  m->run(ptrs(plain));
  EXPECT_TRUE(allclose(plain[o], f32[o], 1e-5, 1e-5, &why)) << f.name << " plain: " << why;
}

Function linear(int rows) {
  std::string text =
      R"(func linear(x: f32[ROWS, 24], w: f32[40, 24], b: f32[40], out: f32[ROWS, 40]) {
  for i in ROWS {
    for n in 40 {
      for k in 24 {
        block out(vi: S[ROWS] = i, vn: S[40] = n, vk: R[24] = k) {
          init { out[vi, vn] = b[vn] }
          out[vi, vn] = out[vi, vn] + x[vi, vk] * w[vn, vk]
        }
      }
    }
  }
})";
  for (size_t at; (at = text.find("ROWS")) != std::string::npos;)
    text.replace(at, 4, std::to_string(rows));
  return parse_function(text);
}

TEST(LlvmBf16Weights, ALinearTakesItsWeightInBf16) {
  for (int rows : {1, 5}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    Function f = linear(rows);
    std::unique_ptr<PluginModule> m = bf16_target().build(f);
    // x and w are the product's operands (the host packs model parameters only: w); the
    // bias and the output are not.
    EXPECT_EQ(offered(*m, f), (std::vector<size_t>{0, 1}));
    EXPECT_EQ(m->packed_layout(1)->key, "bf16 row-major [40,24]");
    expect_computes_with_rounded(f, 1);
  }
}

// A tiled schedule may copy the weight into a local buffer first: the copy reads bf16.
TEST(LlvmBf16Weights, AWeightCopiedIntoALocalBufferIsTakenInBf16) {
  Function f = parse_function(R"(func copied(x: f32[3, 16], w: f32[8, 16], out: f32[3, 8]) {
  buffer wl: f32[8, 16]
  for n in 8 {
    for k in 16 {
      block wl(vn: S[8] = n, vk: S[16] = k) {
        wl[vn, vk] = w[vn, vk]
      }
    }
  }
  for i in 3 {
    for n in 8 {
      for k in 16 {
        block out(vi: S[3] = i, vn: S[8] = n, vk: R[16] = k) {
          init { out[vi, vn] = 0f32 }
          out[vi, vn] = out[vi, vn] + x[vi, vk] * wl[vn, vk]
        }
      }
    }
  }
})");
  expect_computes_with_rounded(f, 1);
}

TEST(LlvmBf16Weights, AGatheredTableAndAnAddedWeightAreNotOffered) {
  Function gather = parse_function(R"(func gather(ids: i64[4], table: f32[4, 8], out: f32[4, 8]) {
  for i in 4 {
    for d in 8 {
      block out(vi: S[4] = i, vd: S[8] = d) {
        out[vi, vd] = table[ids[vi], vd] * 2f32
      }
    }
  }
})");
  EXPECT_TRUE(offered(*bf16_target().build(gather), gather).empty());
  Function added = parse_function(R"(func added(x: f32[4, 4], w: f32[4, 4], out: f32[4, 4]) {
  for i in 4 {
    for n in 4 {
      block out(vi: S[4] = i, vn: S[4] = n) {
        out[vi, vn] = x[vi, vn] * w[vi, vn] + w[vi, vn]
      }
    }
  }
})");
  EXPECT_EQ(offered(*bf16_target().build(added), added), (std::vector<size_t>{0}));
  // Without -fpmath=bf16 nothing is.
  Function f = linear(2);
  auto plain = host().create_target("llvm.cpu", R"({"num_threads": 2})");
  EXPECT_TRUE(offered(*plain->build(f), f).empty());
}

TEST(LlvmBf16Weights, AnUnknownFpmathAndAnArgumentNotOfferedAreRefused) {
  try {
    host().create_target("llvm.cpu", R"({"target": "llvm -fpmath=fp8"})");
    FAIL() << "-fpmath=fp8 was taken";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'-fpmath=fp8'"), std::string::npos) << e.what();
  }
  Function f = linear(2);
  std::unique_ptr<PluginModule> m = bf16_target().build(f);
  std::vector<NDArray> args = make_args(f);
  try {
    m->run_packed(ptrs(args), {0, 0, 1, 0}); // the bias
    FAIL() << "a packed bias was taken";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'b') given packed"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace mt
#endif
