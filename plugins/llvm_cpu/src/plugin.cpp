// The LLVM CPU target as a metatune plugin: registers the component "llvm.cpu" through the SDK.
// Configuration (JSON, all optional): {"target": "llvm -mcpu=... -mattr=... -fpmath=bf16",
// "opt_level": 3, "num_threads": N}. build() turns the host's lowered program into the SDK
// program tree and JIT-compiles it; the module runs it on the plugin's thread pool.
// export_library() compiles the same trees ahead of time into one shared library.
// A module takes a weight that its kernel copies into buffers of its own (a panel per
// iteration of some loops) as those copies, made once (prepacked_weights.h); with -fpmath=bf16 (f32 is the default) a product's weight in bf16
// (bf16_weights.h); compiled a second time to read them so.
#include <atomic>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bf16_weights.h"
#include "prepacked_weights.h"
#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/llvm_cpu/runtime.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"

namespace mt::llvm_cpu {

namespace {

namespace P = mt::sdk::program;

// The params of a kernel that may be handed over packed: a weight it copies into buffers of its
// own, as those copies (prepacked_weights.h; under -fpmath=bf16 only where the copy is laid out
// for AMX tile products), else under -fpmath=bf16 a product's operand in bf16
// (bf16_weight_candidates). What a module offers in process and an exported library packs.
struct PackableWeights {
  std::vector<std::optional<PrepackedWeight>> prepacked;
  std::vector<bool> bf16;

  PackableWeights() = default;
  PackableWeights(const P::Program& tree, bool bf16_weights, bool amx)
      : prepacked(prepackable_weights(tree, amx)) {
    if (bf16_weights) {
      bf16 = bf16_weight_candidates(tree);
      for (auto& w : prepacked)
        if (w && !w->amx_role) w.reset();
    }
    bf16.resize(tree.params.size(), false);
    prepacked.resize(tree.params.size());
    for (size_t i = 0; i < prepacked.size(); ++i)
      if (prepacked[i]) bf16[i] = false;
  }
  bool takes(size_t param) const {
    return param < prepacked.size() && (prepacked[param] || bf16[param]);
  }
  // `tree` reading the params flagged in `which` packed.
  P::Program variant(const P::Program& tree, const std::vector<uint8_t>& which) const {
    std::vector<uint8_t> copies(which.size(), 0), rounded(which.size(), 0);
    for (size_t i = 0; i < which.size(); ++i)
      (prepacked[i] ? copies : rounded)[i] = which[i];
    return with_bf16_params(with_prepacked_weights(tree, prepacked, copies), rounded);
  }
  std::string bf16_key(const P::BufferNode& b) const {
    std::string shape;
    for (int64_t d : b.shape)
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    return "bf16 row-major [" + shape + "]";
  }
};

class LlvmModule : public sdk::Module {
public:
  LlvmModule(std::unique_ptr<JitKernel> kernel, std::vector<P::Buffer> params)
      : kernel_(std::move(kernel)), params_(std::move(params)) {}

  // The tree to compile again for weights handed over packed, and which params may be: a
  // weight the kernel copies into buffers of its own, as those copies (prepacked_weights.h;
  // under -fpmath=bf16 only where the copy is laid out for AMX tile products), else under
  // -fpmath=bf16 a product's operand in bf16 (bf16_weight_candidates).
  void offer_packed_weights(P::Program tree, CompileOptions opts, bool bf16_weights, bool amx) {
    packable_ = PackableWeights(tree, bf16_weights, amx);
    tree_ = std::move(tree);
    opts_ = std::move(opts);
  }

  // The variant reading the params offered so far packed is compiled here, not on the first
  // packed run: the host asks for each weight before it runs anything, and a decode step's
  // first call should not pay for a compile.
  std::optional<PackedLayout> packed_layout(size_t param) override {
    if (!takes_packed(param)) return std::nullopt;
    offered_.resize(params_.size(), 0);
    offered_[param] = 1;
    variant(offered_);
    if (const std::optional<PrepackedWeight>& w = packable_.prepacked[param]) {
      pack_kernel(param);
      return PackedLayout{static_cast<size_t>(w->packed->size_bytes()), w->key};
    }
    const P::BufferNode& b = *params_[param];
    return PackedLayout{static_cast<size_t>(b.num_elements()) * 2, packable_.bf16_key(b)};
  }

  void pack(size_t param, const void* src, void* dst) override {
    if (!takes_packed(param))
      throw sdk::Error(MT_ERROR_UNSUPPORTED, kernel_->symbol() + ": param " +
                                                 std::to_string(param) + " is not taken packed");
    if (const std::optional<PrepackedWeight>& w = packable_.prepacked[param]) {
      // Bytes the copies may leave alone (none should) are zero: equal keys, equal bytes.
      std::memset(dst, 0, static_cast<size_t>(w->packed->size_bytes()));
      void* args[] = {const_cast<void*>(src), dst};
      check(pack_kernel(param)(args));
      return;
    }
    round_to_bf16(static_cast<const float*>(src), static_cast<uint16_t*>(dst),
                  static_cast<size_t>(params_[param]->num_elements()));
  }

  void run_packed(const std::vector<sdk::TensorView>& args,
                  const std::vector<uint8_t>& packed) override {
    std::vector<uint8_t> which(params_.size(), 0);
    bool any = false;
    for (size_t i = 0; i < packed.size() && i < which.size(); ++i) {
      if (!packed[i]) continue;
      if (!takes_packed(i))
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         kernel_->symbol() + ": argument " + std::to_string(i) + " ('" +
                             params_[i]->name + "') given packed, but it is not taken packed");
      which[i] = 1;
      any = true;
    }
    call(any ? variant(which) : *kernel_, args);
  }

  void run(const std::vector<sdk::TensorView>& args) override { call(*kernel_, args); }

private:
  bool takes_packed(size_t param) const { return packable_.takes(param); }

  // The kernel reading the params flagged in `which` packed, compiled once per set.
  JitKernel& variant(const std::vector<uint8_t>& which) {
    auto it = variants_.find(which);
    if (it != variants_.end()) return *it->second;
    try {
      return *variants_.emplace(which, jit_compile(packable_.variant(tree_, which), opts_))
                  .first->second;
    } catch (const CodegenError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, kernel_->symbol() + ": packed weights: " + e.what());
    }
  }

  // The program writing param `param`'s copy, compiled once.
  JitKernel& pack_kernel(size_t param) {
    std::unique_ptr<JitKernel>& k = pack_kernels_[param];
    if (!k) try {
        CompileOptions opts = opts_;
        opts.symbol = "";
        k = jit_compile(packable_.prepacked[param]->pack, opts);
      } catch (const CodegenError& e) {
        throw sdk::Error(MT_ERROR_UNKNOWN, kernel_->symbol() + ": packing param " +
                                               std::to_string(param) + ": " + e.what());
      }
    return *k;
  }

  void check(int32_t rc) const {
    if (rc != MT_LLVM_OK)
      throw sdk::Error(MT_ERROR_UNKNOWN, kernel_->symbol() + " failed with code " +
                                             std::to_string(rc) +
                                             (rc == MT_LLVM_ERR_ALLOC ? " (out of memory)"
                                              : rc == MT_LLVM_ERR_UNSUPPORTED
                                                  ? " (the system refused AMX's tile state)"
                                                  : ""));
  }

  void call(JitKernel& kernel, const std::vector<sdk::TensorView>& args) {
    if (args.size() != params_.size())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       kernel_->symbol() + ": " + std::to_string(args.size()) + " arguments for " +
                           std::to_string(params_.size()) + " parameters");
    std::vector<void*> ptrs(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const P::BufferNode& b = *params_[i];
      if (!(args[i].dtype == b.dtype) || args[i].shape != b.shape)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         kernel_->symbol() + ": argument " + std::to_string(i) + " ('" + b.name +
                             "') has the wrong dtype or shape (want " + P::to_string(b.dtype) +
                             " with " + std::to_string(b.shape.size()) + " dimensions)");
      ptrs[i] = args[i].data;
    }
    check(kernel(ptrs.data()));
  }

  std::unique_ptr<JitKernel> kernel_;
  std::vector<P::Buffer> params_;
  PackableWeights packable_; // the weights taken packed
  std::map<size_t, std::unique_ptr<JitKernel>> pack_kernels_;
  P::Program tree_;
  CompileOptions opts_;
  std::vector<uint8_t> offered_;
  std::map<std::vector<uint8_t>, std::unique_ptr<JitKernel>> variants_;
};

class LlvmCpuTarget : public sdk::Target {
public:
  explicit LlvmCpuTarget(std::string_view config) {
    if (!config.empty()) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(config);
      } catch (const std::exception& e) {
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         std::string("llvm.cpu: configuration is not JSON: ") + e.what());
      }
      opts_.target = without_fpmath(j.value("target", std::string()));
      opts_.opt_level = j.value("opt_level", 3);
      if (j.contains("num_threads")) set_num_threads(j["num_threads"].get<int>());
    }
    try {
      target_ = parse_target(opts_.target);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string("llvm.cpu: ") + e.what());
    }
  }

  std::string describe() override {
    nlohmann::json j;
    j["kind"] = "llvm";
    // -fpmath=bf16 is part of the records' key: its products may round their operands (AMX
    // tile products), so its kernels are timed and checked apart from the f32 ones.
    j["target"] = target_.str() + (opts_.bf16_products ? " -fpmath=bf16" : "");
    if (opts_.bf16_products) j["fpmath"] = "bf16";
    j["triple"] = target_.triple;
    j["cpu"] = target_.cpu;
    j["features"] = enabled_features();
    j["num_cores"] = num_threads();
    // 64 with AVX-512F, 32 with AVX/AVX2, else 16: decided by feature, not by CPU name, so
    // that a CPU LLVM 16 does not know still gets wide vectors.
    j["vector_bytes"] = target_.vector_bits() / 8;
    // How many accumulators a register tile may keep without spilling (std.MultiLevelTiling).
    j["vector_registers"] = target_.vector_registers();
    // -fpmath=bf16 on a CPU with AMX-BF16: the tile products std.MultiLevelTilingAmx tiles
    // for, which this target runs as tdpbf16ps (amx_tile.h).
    if (opts_.bf16_products && target_.has("amx-tile") && target_.has("amx-bf16"))
      j["tile_products"] = "amx.bf16";
    // The ABI's default_components has no place for weights: the tuner reads them here.
    nlohmann::json probs = nlohmann::json::object();
    for (const auto& [name, p] : kMutatorProbabilities)
      probs[name] = p;
    j["mutator_probabilities"] = probs;
    return j.dump();
  }

  std::vector<std::string> default_components(sdk::ComponentKind kind) override {
    switch (kind) {
    case sdk::ComponentKind::ScheduleRule:
      return {"std.AutoInline",           "std.VectorRFactor",    "std.AddRFactor",
              "std.MultiLevelTilingAmx",  "std.MultiLevelTiling", "std.ParallelVectorizeUnroll",
              "std.RandomComputeLocation"};
    case sdk::ComponentKind::Postproc:
      return {"std.DisallowDynamicLoop", "std.RewriteParallelVectorizeUnroll",
              "std.RewriteReductionBlock"};
    case sdk::ComponentKind::Mutator: {
      std::vector<std::string> names;
      for (const auto& [name, p] : kMutatorProbabilities)
        names.push_back(name);
      return names;
    }
    default:
      return {};
    }
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    // Guards of imperfect splits out of the inner loops (a 6-row register tile over 1024 rows).
    P::Program tree =
        P::with_free_buffers_allocated(sdk::to_program_tree(lowered.with_loops_partitioned()));
    try {
      dump_assembly(tree);
      auto kernel = jit_compile(tree, opts_);
      auto module = std::make_unique<LlvmModule>(std::move(kernel), tree.params);
      module->offer_packed_weights(std::move(tree), opts_, bf16_weights_, amx());
      return module;
    } catch (const CodegenError& e) {
      throw sdk::Error(MT_ERROR_UNSUPPORTED, std::string("llvm.cpu: ") + e.what());
    }
  }

  // ABI 1.6: the programs exactly as build() compiles them, as one shared library.
  std::string export_library(const std::vector<sdk::Program>& programs,
                             const std::vector<std::string>& symbols,
                             const std::string& path) override {
    std::vector<P::Program> trees;
    for (const sdk::Program& p : programs)
      trees.push_back(
          P::with_free_buffers_allocated(sdk::to_program_tree(p.with_loops_partitioned())));
    try {
      return export_kernel_library(trees, symbols, path, opts_);
    } catch (const CodegenError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("llvm.cpu: ") + e.what());
    }
  }

  // ABI 1.10: as export_library, and for each program that takes some of its weights packed
  // (as build()'s module would be asked for them: PackableWeights), a variant reading them so
  // ("<symbol>_packed") and the programs writing the copies ("<symbol>_pack<param>"); bf16
  // roundings the application makes itself.
  std::string export_library_weights(const std::vector<sdk::Program>& programs,
                                     const std::vector<std::vector<uint8_t>>& weights,
                                     const std::vector<std::string>& symbols,
                                     const std::string& path) override {
    std::vector<P::Program> trees;
    std::vector<std::string> all_symbols = symbols;
    for (const sdk::Program& p : programs)
      trees.push_back(
          P::with_free_buffers_allocated(sdk::to_program_tree(p.with_loops_partitioned())));
    std::vector<std::pair<size_t, nlohmann::json>> packed; // kernel, its "packed" entry
    for (size_t i = 0; i < programs.size() && i < weights.size(); ++i) {
      const P::Program tree = trees[i];
      const PackableWeights packable(tree, bf16_weights_, amx());
      std::vector<uint8_t> which(tree.params.size(), 0);
      nlohmann::json params = nlohmann::json::array();
      for (size_t p = 0; p < which.size() && p < weights[i].size(); ++p) {
        if (!weights[i][p] || !packable.takes(p)) continue;
        which[p] = 1;
        if (const std::optional<PrepackedWeight>& w = packable.prepacked[p]) {
          const std::string pack = symbols[i] + "_pack" + std::to_string(p);
          trees.push_back(w->pack);
          all_symbols.push_back(pack);
          params.push_back(
              {{"param", p}, {"bytes", w->packed->size_bytes()}, {"key", w->key}, {"pack", pack}});
        } else {
          params.push_back({{"param", p},
                            {"bytes", tree.params[p]->num_elements() * 2},
                            {"key", packable.bf16_key(*tree.params[p])},
                            {"pack", "bf16"}});
        }
      }
      if (params.empty()) continue;
      trees.push_back(packable.variant(tree, which));
      all_symbols.push_back(symbols[i] + "_packed");
      packed.emplace_back(i, nlohmann::json{{"symbol", all_symbols.back()}, {"params", params}});
    }
    try {
      nlohmann::json d =
          nlohmann::json::parse(export_kernel_library(trees, all_symbols, path, opts_));
      for (auto& [i, entry] : packed)
        d["kernels"][i]["packed"] = entry;
      return d.dump(2);
    } catch (const CodegenError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("llvm.cpu: ") + e.what());
    }
  }

private:
  // Products in bf16 run as AMX tile products (amx_tile.h).
  bool amx() const {
    return opts_.bf16_products && target_.has("amx-tile") && target_.has("amx-bf16");
  }

  // The target string without its -fpmath option (which llvm's own parser does not know).
  std::string without_fpmath(const std::string& target) {
    std::istringstream words(target);
    std::string w, out;
    while (words >> w) {
      if (w.rfind("-fpmath=", 0) == 0) {
        if (w != "-fpmath=bf16" && w != "-fpmath=f32")
          throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                           "llvm.cpu: unknown option '" + w + "' (-fpmath=f32 or -fpmath=bf16)");
        bf16_weights_ = w == "-fpmath=bf16";
        opts_.bf16_products = bf16_weights_;
        continue;
      }
      out += (out.empty() ? "" : " ") + w;
    }
    return out;
  }

  // METATUNE_LLVM_DUMP_DIR=DIR: the assembly of every kernel this process builds goes to
  // DIR/kernel-PID-N.s and its IR before optimisation to .ll, to read what a schedule became
  // (register tiles, spills, gathers).
  void dump_assembly(const P::Program& tree) const {
    const char* dir = std::getenv("METATUNE_LLVM_DUMP_DIR");
    if (!dir || !*dir) return;
    static std::atomic<int> counter{0};
    std::string path = std::string(dir) + "/kernel-" + std::to_string(::getpid()) + "-" +
                       std::to_string(counter++) + ".s";
    std::ofstream(path) << emit_assembly(tree, opts_);
    std::ofstream(path.substr(0, path.size() - 2) + ".ll") << emit_ir(tree, opts_, false);
  }

  // TVM's CPU weights (REFERENCE.md), in the order the mutators are offered.
  static constexpr std::pair<const char*, double> kMutatorProbabilities[] = {
      {"std.MutateTileSize", 0.9},
      {"std.MutateComputeLocation", 0.05},
      {"std.MutateUnroll", 0.03},
      {"std.MutateParallel", 0.02},
  };

  // Names of the enabled features: those listed (e.g. host-detected by getHostCPUFeatures)
  // plus the vector extensions the CPU implies, so "-mcpu=znver4" also reports avx512f.
  std::vector<std::string> enabled_features() const {
    std::set<std::string> out;
    for (const auto& f : target_.features)
      if (f.size() > 1 && f[0] == '+') out.insert(f.substr(1));
    const std::string& t = target_.triple;
    if (t.rfind("x86_64", 0) == 0 || (t.size() > 3 && t[0] == 'i' && t.compare(2, 2, "86") == 0))
      for (const char* f : {"sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                            "avx512dq", "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16",
                            "avxvnni", "amx-tile", "amx-int8", "amx-bf16"})
        if (target_.has(f)) out.insert(f);
    // A feature the list switches off stays off.
    for (auto it = out.begin(); it != out.end();)
      it = target_.has(*it) ? std::next(it) : out.erase(it);
    return {out.begin(), out.end()};
  }

  CompileOptions opts_;
  bool bf16_weights_ = false;
  llvm_cpu::Target target_; // (sdk::Target is the base class)
};

} // namespace

} // namespace mt::llvm_cpu

METATUNE_PLUGIN("llvm_cpu", "0.1", "LLVM 16 CPU code generator (JIT, vector code, thread pool)") {
  registry.add<mt::llvm_cpu::LlvmCpuTarget>("llvm.cpu", "CPU target: LLVM IR -> ORC JIT");
}
