// The CUDA target on an NVIDIA device, where one is lent: every workload of the library under
// random schedules of the standard GPU rules, the f16/bf16 workloads, and tensor-core
// schedules (real wmma instructions, whose arithmetic PoCL can only emulate), each built by the
// cuda plugin, run on the device and compared with the reference interpreter. The device's
// attributes are the tuner's own (setup_target), so the schedules are the ones a tuning run on
// that device would sample. Without a device every test here is skipped with the reason.
#include <cstdio>
#include <stdexcept>

#include "core/tuner/target_setup.h"
#include "device_run.h"
#include "gpu_schedule_samples.h"
#include "tensor_core_samples.h"

// The target under test: "cuda"; another GPU target's name and plugin (MT_DEVICE_TARGET,
// MT_CUDA_PLUGIN) run these same tests elsewhere, e.g. on PoCL to check the tests themselves.
#ifndef MT_DEVICE_TARGET
#define MT_DEVICE_TARGET "cuda"
#endif

namespace mt {
namespace {

using namespace std_rules_test;
using gpu_test::Tally;

struct CudaDevice {
  TargetSetup setup;
  std::string unavailable;
};

CudaDevice& cuda_device() {
  static CudaDevice* d = [] {
    auto* r = new CudaDevice;
    const PluginRecord& rec = host().load(MT_CUDA_PLUGIN);
    if (!rec.loaded()) throw std::runtime_error("cuda plugin refused: " + rec.message);
    try {
      r->setup = setup_target(host(), MT_DEVICE_TARGET);
      std::printf("[ %s ] %s\n", MT_DEVICE_TARGET, r->setup.device_json.c_str());
    } catch (const std::runtime_error& e) {
      r->unavailable = e.what();
    }
    return r;
  }();
  return *d;
}

#define REQUIRE_CUDA_DEVICE()                                                                      \
  do {                                                                                             \
    if (!cuda_device().unavailable.empty()) GTEST_SKIP() << cuda_device().unavailable;             \
  } while (0)

void print_tally(const std::string& what, const Tally& t) {
  std::printf(
      "[ %s ] %-70s built %3d  correct %3d  unsupported %2d%s%s\n", MT_DEVICE_TARGET, what.c_str(),
      t.built, t.ok, t.unsupported,
      t.last_unsupported.empty() ? "" : "  last: ", t.last_unsupported.substr(0, 400).c_str());
}

TEST(CudaOnDevice, EveryWorkloadUnderRandomGpuSchedulesMatchesTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  PluginTarget& target = *cuda_device().setup.target;
  Tally t, total;
  gpu_test::for_each_gpu_sample(
      cuda_device().setup.attrs, 4,
      [&](const gpu_test::Sampled& s) {
        EXPECT_EQ(gpu_test::build_and_compare(target, s.scheduled, s.reference, t), "")
            << "space " << s.space << " sample " << s.sample << " trace " << s.trace_json;
      },
      [&](const std::string& spec) {
        print_tally(spec, t);
        EXPECT_GT(t.ok, 0) << spec;
        total += t;
        t = Tally{};
      });
  print_tally("total", total);
  EXPECT_GE(total.ok, 2 * total.unsupported);
}

TEST(CudaOnDevice, HalfPrecisionWorkloadsMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  Tally t;
  gpu_test::for_each_gpu_sample(
      cuda_device().setup.attrs, 3,
      [&](const gpu_test::Sampled& s) {
        EXPECT_EQ(gpu_test::build_and_compare(*cuda_device().setup.target, s.scheduled, s.reference,
                                              t, gpu_test::kHalfRtol, gpu_test::kHalfAtol),
                  "")
            << s.spec << " space " << s.space << " sample " << s.sample << " trace "
            << s.trace_json;
      },
      {}, 2, gpu_test::half_workload_specs());
  print_tally("f16/bf16", t);
  EXPECT_GE(t.ok, 10);
}

// The wmma fragments' own arithmetic: f16 products are exact in f32, the tensor cores' f32
// sums may be ordered and rounded differently from the interpreter's, hence 1e-3.
TEST(CudaOnDevice, TensorCoreSchedulesMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  TuneAttributes attrs = cuda_device().setup.attrs;
  Tally t;
  int n = gpu_test::for_each_tensor_core_sample(attrs, 4, [&](const gpu_test::TensorCoreSample& s) {
    EXPECT_EQ(gpu_test::build_and_compare(*cuda_device().setup.target, s.scheduled, s.reference, t,
                                          1e-3, 1e-3),
              "")
        << s.spec << "\ntrace " << s.trace_json;
  });
  print_tally("tensor-core samples (" + std::to_string(n) + ")", t);
  EXPECT_GE(n, 12); // 3 f16 workloads and a bf16 one, 3 or 4 samples each
  EXPECT_EQ(t.unsupported, 0) << t.last_unsupported;
}

// Hopper's warpgroup MMA (wgmma, sm_90a): the same check on an sm_90 device, the operands
// read from shared memory through the generator's descriptors; `space`'s samples built for the
// device and run against the interpreter.
void check_wgmma_on_device(const gpu_test::TensorCoreSpace& space, const std::string& label) {
  TuneAttributes attrs = cuda_device().setup.attrs;
  auto arch = attrs.find("arch");
  if (arch == attrs.end() || !std::holds_alternative<std::string>(arch->second) ||
      std::get<std::string>(arch->second) != "sm_90")
    GTEST_SKIP() << "wgmma needs an sm_90 device";
  Tally t;
  int n = gpu_test::for_each_tensor_core_sample(
      attrs, 4,
      [&](const gpu_test::TensorCoreSample& s) {
        EXPECT_EQ(gpu_test::build_and_compare(*cuda_device().setup.target, s.scheduled, s.reference,
                                              t, 1e-3, 1e-3),
                  "")
            << s.spec << "\ntrace " << s.trace_json;
      },
      space);
  print_tally(label + " (" + std::to_string(n) + ")", t);
  EXPECT_GE(n, 12);
  EXPECT_EQ(t.unsupported, 0) << t.last_unsupported;
}

TEST(CudaOnDevice, WarpgroupMmaSchedulesMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  check_wgmma_on_device(gpu_test::warpgroup_space(), "wgmma samples");
}

// The same with the operands in the 128-byte swizzled layout: its descriptors (swizzle bits,
// MN-major leading offset along n) are read as tensor_op.h says, or the products are wrong.
TEST(CudaOnDevice, SwizzledWarpgroupMmaSchedulesMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  check_wgmma_on_device(gpu_test::warpgroup_swizzle_space(), "swizzled wgmma samples");
}

// The swizzled tiles of pipelined k loops copied by TMA (tma_copy.h): the tensor maps made at
// launch, the boxes' coordinates and starts, the mbarriers' phases. A wrong one computes wrong
// products, or hangs on a phase that never completes.
TEST(CudaOnDevice, TmaWarpgroupMmaSchedulesMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  check_wgmma_on_device(gpu_test::warpgroup_tma_space(), "wgmma TMA samples");
}

// Those copies issued by a producer warpgroup (producer_warpgroup.h): the consumers wait on the
// full mbarriers and hand slots back on the empty ones, the producer waits for them before each
// refill, and the launch has the producer's warpgroup. A wrong phase or count computes wrong
// products (a slot refilled while read) or traps on a wait that never completes.
TEST(CudaOnDevice, ProducerWarpgroupMmaSchedulesMatchTheInterpreter) {
  REQUIRE_CUDA_DEVICE();
  check_wgmma_on_device(gpu_test::warpgroup_producer_space(), "wgmma producer samples");
}

} // namespace
} // namespace mt
