// Every workload of the library under random schedules of the standard GPU rules, built by the
// opencl plugin (the shared GPU code generator's OpenCL C) and run on the machine's OpenCL
// device -- PoCL on the CPU here, which runs work-groups with local memory and barriers -- and
// compared with the reference interpreter. Wrong thread binding, a missing barrier, a race on
// shared memory or a wrong cross-thread reduction show up as wrong results.
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/plugin/plugin_error.h"
#include "core/tuner/target_setup.h"
#include "gpu_schedule_samples.h"

namespace mt {
namespace {

using namespace std_rules_test;

struct OpenCl {
  std::unique_ptr<PluginTarget> target;
  TuneAttributes attrs;
  std::string unavailable;
};

OpenCl& opencl() {
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

#define REQUIRE_OPENCL()                                                                           \
  do {                                                                                             \
    if (!opencl().unavailable.empty()) {                                                           \
      if (std::getenv("METATUNE_REQUIRE_OPENCL")) FAIL() << opencl().unavailable;                  \
      GTEST_SKIP() << opencl().unavailable;                                                        \
    }                                                                                              \
  } while (0)

struct Tally {
  int built = 0, ok = 0, unsupported = 0;
};

// Runs `scheduled` through the target; "" when it matches the reference.
std::string run_on_device(const Function& scheduled, const std::vector<NDArray>& reference,
                          Tally& t, std::string* unsupported) {
  std::unique_ptr<PluginModule> m;
  try {
    m = opencl().target->build(lower(scheduled));
  } catch (const PluginError& e) {
    if (e.status() == MT_ERROR_UNSUPPORTED) {
      ++t.unsupported;
      *unsupported = e.what();
      return {};
    }
    return std::string("build failed: ") + e.what();
  }
  ++t.built;
  std::vector<NDArray> args = make_args(scheduled);
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  m->run(ptrs);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string why;
    if (!allclose(args[i], reference[i], 1e-4, 1e-5, &why))
      return "param " + std::to_string(i) + ": " + why;
  }
  ++t.ok;
  return {};
}

TEST(OpenClSchedules, EveryWorkloadUnderRandomGpuSchedulesMatchesTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t, total;
  std::string last_unsupported;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 4,
      [&](const gpu_test::Sampled& s) {
        std::string diff = run_on_device(s.scheduled, s.reference, t, &last_unsupported);
        EXPECT_EQ(diff, "") << "space " << s.space << " sample " << s.sample << " trace "
                            << s.trace_json;
      },
      [&](const std::string& spec) {
        std::printf("[ opencl ] %-70s built %2d  correct %2d  unsupported %2d%s%s\n", spec.c_str(),
                    t.built, t.ok, t.unsupported, last_unsupported.empty() ? "" : "  last: ",
                    last_unsupported.substr(0, 160).c_str());
        // Most sampled schedules must run, or GPU tuning would starve.
        EXPECT_GT(t.ok, 0) << spec;
        total.built += t.built;
        total.ok += t.ok;
        total.unsupported += t.unsupported;
        t = Tally{};
        last_unsupported.clear();
      });
  std::printf("[ opencl ] total: built %d, correct %d, unsupported %d\n", total.built, total.ok,
              total.unsupported);
  EXPECT_GE(total.ok, 2 * total.unsupported);
}

} // namespace
} // namespace mt
