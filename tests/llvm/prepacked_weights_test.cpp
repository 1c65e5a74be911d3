// Prepacked weights on the llvm target (plugins/llvm_cpu/src/prepacked_weights.h): a kernel that
// copies a weight into a buffer of its own, a panel per iteration of a loop (a tiled schedule's
// transposed cache), offers those copies as the weight's packed layout; packed once, the kernel
// reads them instead of copying,
// and computes what the interpreter computes -- in f32, and under -fpmath=bf16 on an AMX CPU
// with the copy in the tile products' bf16 pairs (from the weight and input rounded to bf16).
// The packed bytes are checked against the layout written out here; copies that also compute
// and a weight read elsewhere too are not offered.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../function_args.h"
#include "core/ir/parser.h"
#include "core/lower/interpreter.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "llvm_plugin_host.h"
#include "metatune/llvm_cpu/kernel_abi.h"
#include "metatune/llvm_cpu/target.hpp"

#ifdef METATUNE_LLVM_CPU_PLUGIN
namespace mt {
namespace {

using llvm_plugin::host;
using llvm_plugin::rounded_to_bf16;

using test_args::ptrs;

std::unique_ptr<PluginTarget> target(const std::string& t) {
  return host().create_target("llvm.cpu", R"({"target": ")" + t + R"(", "num_threads": 2})");
}

bool host_has_amx() {
  const llvm_cpu::Target t = llvm_cpu::host_target();
  return t.has("amx-tile") && t.has("amx-bf16");
}

// A dense layer out[0, i, n] = sum_k x[0, i, k] * w[n, k] (w as a model stores it, [N, K]) as
// the AMX tiling lays it out: w copied transposed into w_t [K, N] one 16-column panel at a time
// inside the parallel loop, then 16 x 16 x 32 products marked as tile products. `copy` is the
// copy's statement (for the variants that must not be offered).
std::string dense_text(const std::string& copy = "w_t[vk, vn] = w[vn, vk]") {
  return R"(func dense(w: f32[32, 64], x: f32[1, 32, 64], out: f32[1, 32, 32]) {
  buffer w_t: f32[64, 32]
  for jo in 2 parallel {
    for ax1 in 64 {
      for ax0 in 16 vectorized {
        block w_t(vn: S[32] = jo * 16 + ax0, vk: S[64] = ax1) {
          )" +
         copy +
         R"(
        }
      }
    }
    for io in 2 {
      for ii in 16 {
        for jj in 16 {
          block out_init(vb: S[1] = 0, vi: S[32] = io * 16 + ii, vn: S[32] = jo * 16 + jj) {
            out[vb, vi, vn] = 0f32
          }
        }
      }
      for ko in 2 {
        for i in 16 attrs("meta_schedule.tensor_intrinsic": "amx.bf16") {
          for j in 16 {
            for k in 32 {
              block out(vb: S[1] = 0, vi: S[32] = io * 16 + i, vn: S[32] = jo * 16 + j, vk: R[64] = ko * 32 + k) {
                out[vb, vi, vn] = out[vb, vi, vn] + x[vb, vi, vk] * w_t[vk, vn]
              }
            }
          }
        }
      }
    }
  }
})";
}

// Packs the weight (param 0) and runs with it; the output.
NDArray run_with_packed_weight(PluginModule& m, std::vector<NDArray> args,
                               std::vector<uint8_t>* packed_bytes) {
  std::optional<PluginModule::PackedLayout> l = m.packed_layout(0);
  EXPECT_TRUE(l) << "the weight is not offered packed";
  if (!l) return args[2];
  packed_bytes->assign(l->bytes, 0xAB);
  m.pack(0, args[0], packed_bytes->data());
  // A view over the packed bytes (fewer than the declared f32 weight's under bf16).
  NDArray packed(args[0].dtype(), args[0].shape(), packed_bytes->data());
  std::vector<NDArray*> p = ptrs(args);
  p[0] = &packed;
  m.run_packed(p, {1, 0, 0});
  return args[2];
}

TEST(LlvmPrepackedWeights, ATransposedCopyIsMadeOnceAndReadInPlace) {
  Function f = parse_function(dense_text());
  std::unique_ptr<PluginModule> m = target("llvm")->build(f);
  std::optional<PluginModule::PackedLayout> l = m->packed_layout(0);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->bytes, 64u * 32u * 4u);
  // One 16-column panel of w^T per iteration of jo: [2, 64, 16].
  EXPECT_EQ(l->key.rfind("llvm copy of f32[32,64] as f32[2,64,16]: for jo < 2: ", 0), 0u) << l->key;
  EXPECT_FALSE(m->packed_layout(1)) << "the input is copied by nothing";

  std::vector<NDArray> args = test_args::make_args(f);
  std::vector<NDArray> want = args;
  interpret(f, ptrs(want));
  std::vector<uint8_t> bytes;
  NDArray got = run_with_packed_weight(*m, args, &bytes);
  std::string why;
  EXPECT_TRUE(allclose(got, want[2], 1e-5, 1e-5, &why)) << why;
  // The packed bytes are the panels of the weight transposed, every one written.
  const float* t = reinterpret_cast<const float*>(bytes.data());
  int64_t wrong = 0;
  for (int64_t jo = 0; jo < 2; ++jo)
    for (int64_t k = 0; k < 64; ++k)
      for (int64_t n = 0; n < 16; ++n)
        wrong += t[(jo * 64 + k) * 16 + n] !=
                 static_cast<float>(args[0].get_double((jo * 16 + n) * 64 + k));
  EXPECT_EQ(wrong, 0);
  // Plain calls still copy for themselves.
  std::vector<NDArray> plain = args;
  m->run(ptrs(plain));
  EXPECT_TRUE(allclose(plain[2], want[2], 1e-5, 1e-5, &why)) << why;
}

// Exported (ABI 1.10 export_library_weights): told that param 0 is a weight, the library holds
// besides the kernel its variant reading the weight's copies and the program writing them,
// described with the layout the module offers in process; run from the library (no JIT), the
// pack program then the variant compute what the interpreter computes. Told of no weight, the
// library holds the kernel alone.
TEST(LlvmPrepackedWeights, AnExportedLibraryPacksTheWeightsItIsToldOf) {
  Function f = parse_function(dense_text());
  std::unique_ptr<PluginTarget> t = target("llvm");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mt_prepacked_export_" + std::to_string(::getpid()));
  const std::vector<std::vector<uint8_t>> weights = {{1, 0, 0}};
  const nlohmann::json d =
      nlohmann::json::parse(t->export_library({f}, {"dense"}, (dir / "k.so").string(), &weights));
  ASSERT_TRUE(d["kernels"][0].contains("packed")) << d.dump(1);
  const nlohmann::json& packed = d["kernels"][0]["packed"];
  EXPECT_EQ(packed["symbol"], "dense_packed");
  ASSERT_EQ(packed["params"].size(), 1u);
  EXPECT_EQ(packed["params"][0]["param"], 0);
  EXPECT_EQ(packed["params"][0]["bytes"], 64 * 32 * 4);
  EXPECT_EQ(packed["params"][0]["pack"], "dense_pack0");
  EXPECT_EQ(packed["params"][0]["key"], t->build(f)->packed_layout(0)->key);

  void* lib = dlopen((dir / "k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto pack = reinterpret_cast<mt_llvm_kernel_fn>(dlsym(lib, "dense_pack0"));
  auto variant = reinterpret_cast<mt_llvm_kernel_fn>(dlsym(lib, "dense_packed"));
  ASSERT_TRUE(pack && variant);
  std::vector<NDArray> args = test_args::make_args(f);
  std::vector<NDArray> want = args;
  interpret(f, ptrs(want));
  std::vector<float> copies(64 * 32, -1.f);
  void* pack_args[] = {args[0].data(), copies.data()};
  ASSERT_EQ(pack(pack_args, nullptr), 0);
  void* run_args[] = {copies.data(), args[1].data(), args[2].data()};
  ASSERT_EQ(variant(run_args, nullptr), 0);
  std::string why;
  EXPECT_TRUE(allclose(args[2], want[2], 1e-5, 1e-5, &why)) << why;
  dlclose(lib);

  const nlohmann::json plain =
      nlohmann::json::parse(t->export_library({f}, {"dense"}, (dir / "plain.so").string()));
  EXPECT_FALSE(plain["kernels"][0].contains("packed"));
  EXPECT_EQ(plain["kernels"].size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(LlvmPrepackedWeights, UnderBf16ProductsTheCopyIsTheTileProductsPairs) {
  if (!host_has_amx()) GTEST_SKIP() << "this CPU has no AMX-BF16: no tile products";
  Function f = parse_function(dense_text());
  std::unique_ptr<PluginModule> m = target("llvm -fpmath=bf16")->build(f);
  std::optional<PluginModule::PackedLayout> l = m->packed_layout(0);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->bytes, 64u * 32u * 2u);
  EXPECT_EQ(l->key.rfind("llvm copy of f32[32,64] as bf16[2,32,16,2] (AMX tile products' B, in "
                         "pairs): for jo < 2: ",
                         0),
            0u)
      << l->key;

  std::vector<NDArray> args = test_args::make_args(f, 7, 0, 4);
  std::vector<NDArray> exact = args, rounded = args;
  rounded[0] = rounded_to_bf16(args[0]);
  rounded[1] = rounded_to_bf16(args[1]);
  interpret(f, ptrs(exact));
  interpret(f, ptrs(rounded));
  std::vector<uint8_t> bytes;
  NDArray got = run_with_packed_weight(*m, args, &bytes);
  std::string why;
  EXPECT_TRUE(allclose(got, rounded[2], 1e-5, 1e-5, &why)) << why;
  double moved = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i)
    moved = std::max(moved, std::fabs(got.get_double(i) - exact[2].get_double(i)));
  EXPECT_GT(moved, 1e-4) << "the packed run did not round to bf16: no tile products ran";
  // Pair p of panel jo holds rows 2p and 2p + 1 of its w^T side by side: w[n, 2p], w[n, 2p + 1].
  const uint16_t* pairs = reinterpret_cast<const uint16_t*>(bytes.data());
  NDArray w16(DType::bf16(), args[0].shape());
  for (int64_t i = 0; i < w16.num_elements(); ++i)
    w16.set_double(i, args[0].get_double(i));
  const uint16_t* w = static_cast<const uint16_t*>(w16.data());
  int64_t wrong = 0;
  for (int64_t jo = 0; jo < 2; ++jo)
    for (int64_t p = 0; p < 32; ++p)
      for (int64_t n = 0; n < 16; ++n)
        for (int64_t r = 0; r < 2; ++r)
          wrong += pairs[((jo * 32 + p) * 16 + n) * 2 + r] != w[(jo * 16 + n) * 64 + 2 * p + r];
  EXPECT_EQ(wrong, 0);
}

// The copy after other work of the iteration (zeroing an accumulator), its buffer allocated
// beside that accumulator's.
TEST(LlvmPrepackedWeights, ACopyAfterOtherWorkBesideOtherCachesIsTaken) {
  Function f =
      parse_function(R"(func dense(w: f32[32, 64], x: f32[1, 32, 64], out: f32[1, 32, 32]) {
  buffer w_t: f32[64, 32]
  buffer acc: f32[1, 32, 32]
  for jo in 2 parallel {
    for ii in 32 {
      for jj in 16 {
        block acc_init(vb: S[1] = 0, vi: S[32] = ii, vn: S[32] = jo * 16 + jj) {
          acc[vb, vi, vn] = 0f32
        }
      }
    }
    for ax1 in 64 {
      for ax0 in 16 vectorized {
        block w_t(vn: S[32] = jo * 16 + ax0, vk: S[64] = ax1) {
          w_t[vk, vn] = w[vn, vk]
        }
      }
    }
    for i in 32 {
      for j in 16 {
        for k in 64 {
          block acc(vb: S[1] = 0, vi: S[32] = i, vn: S[32] = jo * 16 + j, vk: R[64] = k) {
            acc[vb, vi, vn] = acc[vb, vi, vn] + x[vb, vi, vk] * w_t[vk, vn]
          }
        }
      }
    }
    for ii in 32 {
      for jj in 16 {
        block out(vb: S[1] = 0, vi: S[32] = ii, vn: S[32] = jo * 16 + jj) {
          out[vb, vi, vn] = acc[vb, vi, vn]
        }
      }
    }
  }
})");
  std::unique_ptr<PluginModule> m = target("llvm")->build(f);
  std::vector<NDArray> args = test_args::make_args(f);
  std::vector<NDArray> want = args;
  interpret(f, ptrs(want));
  std::vector<uint8_t> bytes;
  NDArray got = run_with_packed_weight(*m, args, &bytes);
  EXPECT_EQ(bytes.size(), 64u * 32u * 4u);
  std::string why;
  EXPECT_TRUE(allclose(got, want[2], 1e-5, 1e-5, &why)) << why;
}

TEST(LlvmPrepackedWeights, CopiesThatComputeAreNotOffered) {
  // A copy that computes; the weight also read by something else than a copy.
  for (const std::string& copy : {std::string("w_t[vk, vn] = w[vn, vk] * 2f32"),
                                  std::string("w_t[vk, vn] = w[vn, vk] + w[vn, 0]")}) {
    SCOPED_TRACE(copy);
    Function f = parse_function(dense_text(copy));
    EXPECT_FALSE(target("llvm")->build(f)->packed_layout(0));
  }
}

} // namespace
} // namespace mt
#endif
