// What the GPU target plugins share around the generator: their configuration
// ({"arch": "sm_90" | "gfx90a", "device": 0}, or the CLI's {"target": "cuda -arch=sm_90"}) and
// the step from the host's lowered program to a plan and its source, with what the generator
// cannot express turned into MT_ERROR_UNSUPPORTED (one failed trial, not a failed run).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/sdk/error.hpp"
#include "metatune/sdk/ir.hpp"
#include "metatune/sdk/program_builder.hpp"

namespace mt::gpu_codegen {

struct GpuTargetConfig {
  std::string arch; // "" = the device's
  int device = 0;   // ordinal

  static GpuTargetConfig parse(std::string_view config, const std::string& target) {
    GpuTargetConfig c;
    if (config.empty()) return c;
    try {
      nlohmann::json j = nlohmann::json::parse(config);
      c.arch = j.value("arch", std::string());
      c.device = j.value("device", 0);
      std::string t = j.value("target", std::string());
      size_t at = t.find("-arch=");
      if (c.arch.empty() && at != std::string::npos)
        c.arch = t.substr(at + 6, t.find(' ', at) - (at + 6));
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       target + ": configuration is not JSON: " + e.what());
    }
    return c;
  }
};

struct GeneratedProgram {
  KernelPlan plan;
  GpuSource source;
};

// The lowered program's plan and source in `dialect`; written to $METATUNE_DUMP_GPU_SOURCE
// as <name>.<ext> when that is set.
inline GeneratedProgram generate(const sdk::Program& lowered, const Dialect& dialect,
                                 const std::string& target, const std::string& ext) {
  GeneratedProgram g;
  try {
    g.plan = plan_kernels(sdk::to_program_tree(lowered));
    g.source = write_kernels(g.plan, dialect);
    // The launches as written (a producer warpgroup widens a block).
    for (size_t k = 0; k < g.plan.kernels.size(); ++k)
      g.plan.kernels[k].dims = g.source.launch_dims.at(k);
  } catch (const UnsupportedError& e) {
    throw sdk::Error(MT_ERROR_UNSUPPORTED, target + ": " + e.what());
  }
  maybe_dump_source(g.plan.name, g.source.code, ext);
  return g;
}

} // namespace mt::gpu_codegen
