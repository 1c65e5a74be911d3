// The opencl plugin's target, loaded once per test binary (shared by its test files), with the
// device's limits as the standard GPU rules' attributes, or why there is no device.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "device_run.h"
#include "std_rules_test_util.h"

namespace mt::gpu_test {

using namespace std_rules_test;

struct OpenCl {
  std::unique_ptr<PluginTarget> target;
  TuneAttributes attrs;
  std::string unavailable;
};

inline OpenCl& opencl() {
  static OpenCl* o = [] {
    auto* r = new OpenCl;
    const PluginRecord& rec = host().load(MT_OPENCL_PLUGIN);
    if (!rec.loaded()) throw std::runtime_error("opencl plugin refused: " + rec.message);
    r->target = host().create_target("opencl");
    nlohmann::json j = nlohmann::json::parse(r->target->describe_device());
    r->unavailable = j.value("unavailable", std::string());
    r->attrs = gpu_set().attrs;
    r->attrs["kind"] = std::string("opencl");
    if (j.contains("max_threads_per_block"))
      r->attrs["max_threads_per_block"] = j["max_threads_per_block"].get<int64_t>();
    if (j.contains("max_shared_memory_per_block"))
      r->attrs["max_shared_memory_per_block"] = j["max_shared_memory_per_block"].get<int64_t>();
    return r;
  }();
  return *o;
}

// Skips (or, with METATUNE_REQUIRE_OPENCL set, fails) a test where there is no device.
#define REQUIRE_OPENCL()                                                                           \
  do {                                                                                             \
    if (!::mt::gpu_test::opencl().unavailable.empty()) {                                           \
      if (std::getenv("METATUNE_REQUIRE_OPENCL")) FAIL() << ::mt::gpu_test::opencl().unavailable;  \
      GTEST_SKIP() << ::mt::gpu_test::opencl().unavailable;                                        \
    }                                                                                              \
  } while (0)

} // namespace mt::gpu_test
