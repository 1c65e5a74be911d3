// Tensor-core schedules (std.MultiLevelTilingTensorCore) checked without an NVIDIA GPU: the
// OpenCL dialect has no tensor cores, so the generator writes each marked 16x16(x16) nest as
// the loops they are -- WMMA's tile semantics, emulated by every lane of the warp -- after the
// same recognition and the same warp, alignment and fragment checks the CUDA dialect applies
// before it emits wmma calls. PoCL runs them and the interpreter checks the result. Wide
// (vectorised) fetches: f32 tiles, and the tensor-core fetches of f16/bf16 tiles (shared
// arrays hold them in their own type, as in CUDA). Marked nests that are not the operation
// they claim are refused with the reason.
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "opencl_target.h"
#include "tensor_core_samples.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;
using namespace std_rules_test;

// The generated source of one schedule, or the generator's refusal.
std::string opencl_source(const Function& scheduled) {
  sdk::program::Program p = llvm_cpu::test::core_to_program(lower(scheduled));
  try {
    return G::write_kernels(G::plan_kernels(p), *G::opencl_dialect()).code;
  } catch (const G::UnsupportedError& e) {
    return std::string("refused: ") + e.what();
  }
}

// Warps per block of the (first) kernel: the work-group's second dimension.
int64_t warps_of(const std::string& src) {
  size_t at = src.find("reqd_work_group_size(32, ");
  return at == std::string::npos ? 0 : std::atoll(src.c_str() + at + 25);
}

TEST(TensorCoreSchedules, RandomTensorCoreSchedulesMatchTheInterpreterOnOpenCl) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  gpu_test::Tally t;
  int several_warps = 0, pipelined = 0, wide = 0;
  int n = gpu_test::for_each_tensor_core_sample(
      gpu_test::opencl().attrs, 4, [&](const gpu_test::TensorCoreSample& s) {
        std::string src = opencl_source(s.scheduled);
        if (warps_of(src) > 1) ++several_warps;
        // f16/bf16 operand tiles fetched 2 to 8 per lane in one move, the same index logic
        // CUDA's cp.async fetches use.
        if (src.find("lanes in one move") != std::string::npos) ++wide;
        // The k-tile fetched a step ahead into a second slot (core's software_pipeline.h):
        // prologue, slot indices and barriers checked here like the rest.
        if (gpu_test::is_pipelined(s.scheduled)) ++pipelined;
        // f16 products are exact in f32; only the order of the f32 sums differs. A build that
        // fails for another reason than "unsupported" is a difference too.
        EXPECT_EQ(gpu_test::build_and_compare(target, s.scheduled, s.reference, t, 1e-4, 1e-4), "")
            << s.spec << "\ntrace " << s.trace_json;
      });
  std::printf("[ tensor cores on opencl ] %d samples: %d ran and were compared, %d refused%s%s\n",
              n, t.built, t.unsupported, t.last_unsupported.empty() ? "" : "; last: ",
              t.last_unsupported.substr(0, 400).c_str());
  EXPECT_GE(n, 12); // 3 f16 workloads and a bf16 one, 3 or 4 samples each
  EXPECT_EQ(t.unsupported, 0) << t.last_unsupported;
  // Warps that share the block's shared tiles and write their own accumulator tiles.
  std::printf("[ tensor cores on opencl ] %d of them with several warps per block\n",
              several_warps);
  EXPECT_GE(several_warps, 3);
  std::printf("[ tensor cores on opencl ] %d of them software-pipelined, %d with wide fetches\n",
              pipelined, wide);
  EXPECT_GE(pipelined, 3);
  EXPECT_GE(wide, 3);
}

// "auto" follows the target's arch: WMMA's f16 shape from sm_70 (Volta), its bf16 one from
// sm_80 (Ampere); below, no tensor-core space at all.
TEST(TensorCoreSchedules, TheRuleFollowsTheArchitectureF16FromSm70Bf16FromSm80) {
  struct Case {
    const char* arch;
    bool f16, bf16;
  };
  for (Case c :
       {Case{"sm_61", false, false}, Case{"sm_75", true, false}, Case{"sm_90", true, true}}) {
    TuneAttributes attrs = gpu_set().attrs;
    attrs["arch"] = std::string(c.arch);
    std::vector<std::unique_ptr<PluginScheduleRule>> rules;
    rules.push_back(host().create_schedule_rule("std.MultiLevelTilingTensorCore"));
    rules.back()->initialize(attrs);
    for (auto [spec, want] :
         {std::pair{"matmul(M=32,N=32,K=32,dtype=f16,out_dtype=f32)", c.f16},
          std::pair{"matmul(M=32,N=32,K=32,dtype=bf16,out_dtype=f32)", c.bf16}}) {
      int tensor_core_spaces = 0;
      for (const auto& space : generate_design_spaces(make_workload(spec), rules, 1))
        tensor_core_spaces += space->trace().to_json().find("wmma.mma") != std::string::npos;
      EXPECT_EQ(tensor_core_spaces, want ? 1 : 0) << c.arch << " " << spec;
    }
  }
}

TEST(WideFetches, CooperativeFetchesOfConsecutiveElementsBecomeOneMoveAndMatchTheInterpreter) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  int wide = 0, n = 0;
  gpu_test::for_each_gpu_sample(
      gpu_test::opencl().attrs, 4,
      [&](const gpu_test::Sampled& s) {
        ++n;
        if (opencl_source(s.scheduled).find("lanes in one move") == std::string::npos) return;
        ++wide;
        std::unique_ptr<PluginModule> m = target.build(lower(s.scheduled));
        EXPECT_EQ(gpu_test::run_and_compare(*m, s.scheduled, s.reference, 1e-4, 1e-5), "")
            << s.spec << " trace " << s.trace_json;
      },
      {}, 6, {"matmul(M=64,N=48,K=32)", "dense(M=32,N=64,K=48,bias=0,act=none)"});
  std::printf("[ opencl ] %d of %d sampled schedules fetch with wide moves\n", wide, n);
  EXPECT_GE(wide, 3);
}

// The rule's vector_load_lens: the lanes of its fetches ([4, 8] by default: cp.async's 8 and
// 16 bytes). Fetches one element wide copy an f16/bf16 element as itself, not through float
// (two conversions per element), and still match the interpreter on PoCL.
TEST(TensorCoreSchedules, FetchLanesFollowVectorLoadLensAndOneLaneCopiesHalvesAsThemselves) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  TuneAttributes attrs = gpu_test::opencl().attrs;
  auto postprocs = gpu_test::gpu_postprocs(attrs);
  auto lanes_of = [](const Schedule& s) {
    std::set<int64_t> lanes;
    nlohmann::json t = nlohmann::json::parse(s.trace().to_json());
    for (const auto& inst : t[0])
      if (inst[0] == "annotate" && inst[2].size() == 2 &&
          inst[2][0] == "meta_schedule.cooperative_fetch")
        lanes.insert(inst[2][1].get<int64_t>());
    return lanes;
  };
  for (const char* config :
       {R"({"enabled": "always"})", R"({"enabled": "always", "vector_load_lens": [1]})"}) {
    const bool one = std::string(config).find("[1]") != std::string::npos;
    std::vector<std::unique_ptr<PluginScheduleRule>> rules;
    rules.push_back(host().create_schedule_rule("std.MultiLevelTilingTensorCore", config));
    rules.back()->initialize(attrs);
    for (const char* spec : {"matmul(M=32,N=64,K=32,dtype=f16,out_dtype=f32)",
                             "matmul(M=32,N=64,K=32,dtype=bf16,out_dtype=f32)"}) {
      SCOPED_TRACE(std::string(config) + " " + spec);
      Function func = make_workload(spec);
      std::vector<NDArray> reference = run(func);
      int sampled = 0;
      gpu_test::Tally t;
      for (const auto& space : generate_design_spaces(func, rules, 1)) {
        if (space->trace().to_json().find("wmma.mma") == std::string::npos) continue;
        for (uint64_t k = 0; k < 16 && sampled < 4; ++k) {
          std::shared_ptr<Schedule> s;
          if (sample(func, space->trace(), 300 + k, false, postprocs, &s) != SampleOutcome::Ok)
            continue;
          ++sampled;
          for (int64_t l : lanes_of(*s))
            EXPECT_TRUE(one ? l == 1 : (l == 4 || l == 8)) << l;
          if (!one) continue;
          sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
          std::string cuda = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
          EXPECT_EQ(cuda.find("__float2half_rn(__half2float("), std::string::npos) << cuda;
          EXPECT_EQ(cuda.find("mt_f32_to_bf16(mt_bf16_to_f32("), std::string::npos) << cuda;
          EXPECT_EQ(gpu_test::build_and_compare(target, s->func(), reference, t, 1e-4, 1e-4), "")
              << s->trace().to_json();
        }
      }
      EXPECT_EQ(sampled, 4);
    }
  }
  EXPECT_THROW(
      host().create_schedule_rule("std.MultiLevelTilingTensorCore", R"({"vector_load_lens": [3]})"),
      std::exception);
}

// The first tensor-core sample of matmul, as a schedule to alter.
std::shared_ptr<Schedule> first_matmul_sample() {
  std::shared_ptr<Schedule> out;
  gpu_test::for_each_tensor_core_sample(gpu_test::opencl().attrs, 1,
                                        [&](const gpu_test::TensorCoreSample& s) {
                                          if (!out && s.spec.rfind("matmul", 0) == 0) {
                                            Trace t = Trace::from_json(s.trace_json);
                                            out = std::make_shared<Schedule>(make_workload(s.spec));
                                            t.apply_to(*out);
                                          }
                                        });
  return out;
}

TEST(TensorCoreSchedules, ANestMarkedAsAnOperationItIsNotIsRefusedWithTheReason) {
  std::shared_ptr<Schedule> sch = first_matmul_sample();
  ASSERT_TRUE(sch);
  ASSERT_EQ(opencl_source(sch->func()).rfind("refused", 0), std::string::npos)
      << opencl_source(sch->func());
  // Mark the write-back as a multiply-accumulate: two loops, not three, and no product.
  BlockRV store = sch->get_block("matmul_wmma.accumulator");
  std::vector<LoopRV> loops = sch->get_loops(store);
  sch->annotate(loops[loops.size() - 2], sdk::program::kTensorIntrinsicAnnotation,
                std::string("wmma.mma"));
  std::string src = opencl_source(sch->func());
  EXPECT_NE(src.find("refused: the nest marked wmma.mma is not 3 serial loops of 16"),
            std::string::npos)
      << src.substr(0, 300);
}

TEST(TensorCoreSchedules, AFragmentTouchedOutsideTheOperationsIsRefused) {
  std::shared_ptr<Schedule> sch = first_matmul_sample();
  ASSERT_TRUE(sch);
  // Without its mark the write-back is an element-wise read of the accumulator fragment,
  // whose layout in the warp's registers is the hardware's secret.
  BlockRV store = sch->get_block("matmul_wmma.accumulator");
  std::vector<LoopRV> loops = sch->get_loops(store);
  sch->unannotate(loops[loops.size() - 2], sdk::program::kTensorIntrinsicAnnotation);
  std::string src = opencl_source(sch->func());
  EXPECT_NE(src.find("touches a tensor-core fragment outside the fragment operations"),
            std::string::npos)
      << src.substr(0, 300);
}

} // namespace
} // namespace mt
