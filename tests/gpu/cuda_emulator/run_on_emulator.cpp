// A schedule's generated source run on the CUDA emulator against the reference
// (run_on_emulator.h).
#include "run_on_emulator.h"

#include <array>
#include <cstring>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "emulated_tensor_map.h"
#include "metatune/gpu_codegen/dialect.hpp"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/tensor_map.hpp"
#include "std_rules_test_util.h"

namespace mt::gpu_test::emulator {

namespace G = mt::gpu_codegen;

namespace {

// The module's kernels run once over arguments as the tests make them, plus the plan's
// temporaries; parameters in the order the cuda target passes them (every buffer, the host
// loops' values, the tensor maps).
std::string run_once(EmulatedModule& module, const G::KernelPlan& plan, const G::GpuSource& src,
                     std::vector<NDArray>& args, uint64_t seed, Counts* counts) {
  std::vector<void*> buffers;
  std::vector<std::vector<unsigned char>> temporaries(plan.buffers.size());
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (b < args.size()) {
      buffers.push_back(args[b].data());
    } else {
      temporaries[b].assign(static_cast<size_t>(plan.buffers[b]->size_bytes()), 0xFF);
      buffers.push_back(temporaries[b].data());
    }
  }
  std::string error;
  G::run_host_steps(plan, [&](int k, const std::vector<int64_t>& scalars) {
    if (!error.empty()) return;
    const size_t kernel = static_cast<size_t>(k);
    std::vector<long long> values(scalars.begin(), scalars.end());
    const auto& specs = src.tensor_maps.at(kernel);
    std::vector<std::array<uint64_t, 16>> map_bytes(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const G::TensorMapSpec& spec = specs[i];
      mt_emu::EmulatedTensorMap m;
      m.base = static_cast<const unsigned char*>(buffers.at(spec.buffer));
      m.rank = static_cast<int>(spec.dims.size());
      if (m.rank > 4) {
        error = "a tensor map of rank " + std::to_string(m.rank);
        return;
      }
      m.swizzle_bytes = spec.swizzle_bytes;
      for (size_t d = 0; d < spec.dims.size(); ++d) {
        m.dims[d] = spec.dims[d];
        m.box[d] = spec.box[d];
        if (d > 0) m.strides[d] = spec.strides_bytes[d - 1];
      }
      std::memcpy(map_bytes[i].data(), &m, sizeof m);
    }
    std::vector<void*> params;
    for (void*& b : buffers)
      params.push_back(&b);
    for (long long& v : values)
      params.push_back(&v);
    for (auto& m : map_bytes)
      params.push_back(m.data());
    error = module.launch(plan.kernels[kernel].name, src.launch_dims.at(kernel),
                          static_cast<size_t>(src.dynamic_shared_bytes.at(kernel)), params.data(),
                          seed, counts);
  });
  return error;
}

} // namespace

std::string run_and_compare(const Function& scheduled, const std::vector<NDArray>& reference,
                            const RunOptions& options, Counts* counts, std::string* source) {
  sdk::program::Program p = llvm_cpu::test::core_to_program(lower(scheduled));
  G::KernelPlan plan = G::plan_kernels(p);
  G::GpuSource src = G::write_kernels(plan, options.hip ? *G::hip_dialect() : *G::cuda_dialect());
  if (options.edit) src.code = options.edit(src.code);
  if (source) *source = src.code;
  EmulatedModule module(src.code);
  for (uint64_t seed : options.seeds) {
    std::vector<NDArray> args = std_rules_test::make_args(scheduled);
    std::string error = run_once(module, plan, src, args, seed, counts);
    if (!error.empty()) return "seed " + std::to_string(seed) + ": emulator: " + error;
    for (size_t i = 0; i < args.size(); ++i) {
      std::string why;
      if (!allclose(args[i], reference[i], options.rtol, options.atol, &why))
        return "seed " + std::to_string(seed) + ": param " + std::to_string(i) + ": " + why;
    }
  }
  return {};
}

} // namespace mt::gpu_test::emulator
