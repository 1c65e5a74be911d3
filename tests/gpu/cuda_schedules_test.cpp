// The standard GPU rules' random schedules of every workload as CUDA C++ from the shared GPU
// code generator, compiled by NVRTC for sm_80 (A100) and sm_90 (H100): no error and no warning.
// Needs libnvrtc (the CUDA toolkit), not a GPU; the arithmetic of the same schedules is checked
// by the opencl tests, which share the generator.
#include <cctype>
#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "nvrtc_compiler.h"
#include "tensor_core_samples.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;

// Compiles `src` for sm_80 and sm_90, expecting no error and no warning; returns how many
// compiled.
int compile_for_sm80_and_sm90(cuda::Nvrtc& nvrtc, const std::string& src, const std::string& name,
                              const std::string& spec) {
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90"}) {
    cuda::NvrtcResult r = nvrtc.compile(src, name + ".cu", arch);
    EXPECT_TRUE(r.ok) << spec << " " << arch << ":\n" << r.log << "\n" << src;
    EXPECT_TRUE(cuda::Nvrtc::log_is_clean(r.log)) << spec << " " << arch << " warns:\n"
                                                  << r.log << "\n"
                                                  << src;
    if (r.ok) ++compiled;
  }
  return compiled;
}

TEST(CudaSchedules, EveryWorkloadUnderRandomGpuSchedulesCompilesForSm80AndSm90) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TuneAttributes attrs = std_rules_test::gpu_set().attrs; // an sm_80-class device's limits
  int compiled = 0, unsupported = 0;
  auto compile = [&](const gpu_test::Sampled& s) {
    sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
    G::GpuSource src;
    try {
      src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect());
    } catch (const G::UnsupportedError&) {
      ++unsupported;
      return;
    }
    compiled += compile_for_sm80_and_sm90(*nvrtc, src.code, p.name, s.spec);
  };
  gpu_test::for_each_gpu_sample(attrs, 3, compile);
  // f16/bf16 shared tiles are held in their own type (half the shared memory, as VerifyGPUCode
  // counts it), read and written through the conversions.
  int half_tiles = 0;
  gpu_test::for_each_gpu_sample(
      attrs, 2,
      [&](const gpu_test::Sampled& s) {
        sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
        try {
          std::string code = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
          half_tiles += code.find("__shared__ __align__(16) __half ") != std::string::npos ||
                        code.find("__shared__ __align__(16) unsigned short ") != std::string::npos;
        } catch (const G::UnsupportedError&) {
        }
        compile(s);
      },
      {}, 1, gpu_test::half_workload_specs());
  std::printf("[ cuda ] %d programs compiled (sm_80 + sm_90 counted apart), %d unsupported; %d "
              "f16/bf16 programs with shared tiles in their own type\n",
              compiled, unsupported, half_tiles);
  EXPECT_GE(half_tiles, 2);
  EXPECT_GT(compiled, 100);
  EXPECT_LE(unsupported * 4, compiled);
}

// The tensor-core schedules become wmma calls (fill, loads, mma_sync, store) and compile for
// sm_80 and sm_90; their arithmetic is checked by the opencl tests, which emulate the same
// recognised operations with loops (tensor_core_test.cpp).
TEST(CudaSchedules, TensorCoreSchedulesBecomeWmmaCallsThatCompileForSm80AndSm90) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  int compiled = 0, n_seen = 0, wide = 0, pipelined = 0, async16 = 0, n_bf16 = 0;
  int n = gpu_test::for_each_tensor_core_sample(
      std_rules_test::gpu_set().attrs, 3, [&](const gpu_test::TensorCoreSample& s) {
        sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
        G::GpuSource src;
        try {
          src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect());
        } catch (const G::UnsupportedError& e) {
          ADD_FAILURE() << s.spec << ": refused: " << e.what() << "\ntrace " << s.trace_json;
          return;
        }
        // METATUNE_DUMP_GPU_SOURCE=DIR keeps each sample's source.
        G::maybe_dump_source(p.name + "_tc" + std::to_string(n_seen++), src.code, "cu");
        if (src.code.find("lanes in one move") != std::string::npos) ++wide;
        // A pipelined k loop of 2 stages (core's software_pipeline.h): the wait for this
        // iteration's tile (no newer group in flight), the iteration's one barrier, then the
        // fetch ahead issued with cp.async and committed, and the products with no barrier
        // between them and the fetch.
        if (gpu_test::is_pipelined(s.scheduled)) {
          ++pipelined;
          size_t wait = src.code.find("mt_cp_async_wait<0>();");
          EXPECT_NE(wait, std::string::npos) << s.spec << "\n" << src.code;
          if (wait != std::string::npos) {
            size_t next = src.code.find_first_not_of(" \n", src.code.find('\n', wait));
            EXPECT_EQ(src.code.compare(next, 16, "__syncthreads();"), 0) << src.code;
            size_t commit = src.code.find("mt_cp_async_commit();", wait);
            size_t product = src.code.find("nvcuda::wmma::mma_sync", wait);
            EXPECT_LT(commit, product) << src.code;
            size_t barriers = 0;
            for (size_t at = src.code.find("__syncthreads();", wait); at < product;
                 at = src.code.find("__syncthreads();", at + 1))
              ++barriers;
            EXPECT_EQ(barriers, 1u) << "one barrier an iteration\n" << src.code;
          }
          if (src.code.find("mt_cp_async_16(&") != std::string::npos) ++async16;
        }
        for (const char* call : {"nvcuda::wmma::fill_fragment", "nvcuda::wmma::load_matrix_sync",
                                 "nvcuda::wmma::mma_sync", "nvcuda::wmma::store_matrix_sync"})
          EXPECT_NE(src.code.find(call), std::string::npos) << s.spec << ": no " << call << "\n"
                                                            << src.code;
        // The operands' tiles come from shared memory held in their type (bf16 as 16-bit
        // integers) and aligned for the loads; bf16 fragments are __nv_bfloat16 (sm_80+).
        const bool bf16 = s.spec.find("dtype=bf16") != std::string::npos;
        EXPECT_NE(src.code.find(bf16 ? "__shared__ __align__(32) unsigned short"
                                     : "__shared__ __align__(32) __half"),
                  std::string::npos)
            << src.code;
        if (bf16) {
          ++n_bf16;
          EXPECT_NE(src.code.find("16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major>"),
                    std::string::npos)
              << src.code;
        }
        compiled += compile_for_sm80_and_sm90(*nvrtc, src.code, p.name, s.spec);
      });
  std::printf("[ cuda ] %d tensor-core schedules, %d compiled (sm_80 + sm_90 counted apart)\n", n,
              compiled);
  EXPECT_GE(n, 12);
  EXPECT_GE(n_bf16, 3);
  EXPECT_EQ(compiled, 2 * n);
  // f16 tiles fetched 2 to 8 per lane in one move (their index logic is PoCL-checked on f32
  // tiles: WideFetches.*).
  EXPECT_GE(wide, 3);
  std::printf("[ cuda ] %d of them software-pipelined, %d with 16-byte cp.async fetches\n",
              pipelined, async16);
  EXPECT_GE(pipelined, 3);
  EXPECT_GE(async16, 1);
}

// bench/gpu's shape: the 4096^3 f16 matmul gets its tensor-core space on an sm_80-class
// device, most of its samples pass the postprocessors (VerifyGPUCode bounds the warps), and
// they compile. No interpreter here: the shape is too big for it, and the arithmetic of the
// same space is checked on the small shapes (tensor_core_test.cpp).
TEST(CudaSchedules, TheBenchSizedTensorCoreSpaceSamplesAndCompiles) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TuneAttributes attrs = std_rules_test::gpu_set().attrs;
  Function func = make_workload("matmul(M=4096,N=4096,K=4096,dtype=f16,out_dtype=f32)");
  auto rules = gpu_test::tensor_core_rules(attrs);
  auto postprocs = gpu_test::gpu_postprocs(attrs);
  int spaces = 0, accepted = 0, compiled = 0;
  std::string last_refusal;
  for (const auto& space : generate_design_spaces(func, rules, 1)) {
    if (space->trace().to_json().find("wmma.mma") == std::string::npos) continue;
    ++spaces;
    for (uint64_t k = 0; k < 20; ++k) {
      std::shared_ptr<Schedule> s;
      std::string refused;
      if (std_rules_test::sample(func, space->trace(), 900 + k, false, postprocs, &s, &refused) !=
          SampleOutcome::Ok) {
        last_refusal = refused;
        continue;
      }
      ++accepted;
      if (accepted > 3) continue; // compiling a few is enough
      sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
      std::string src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
      EXPECT_NE(src.find("nvcuda::wmma::mma_sync"), std::string::npos);
      compiled += compile_for_sm80_and_sm90(*nvrtc, src, p.name, "matmul 4096 f16");
    }
  }
  std::printf("[ cuda ] 4096^3 f16: %d tensor-core space(s), %d of 20 samples accepted, %d "
              "compiled\n",
              spaces, accepted, compiled);
  EXPECT_EQ(spaces, 1);
  EXPECT_GE(accepted, 10) << "last refusal: " << last_refusal;
  EXPECT_EQ(compiled, 6);
}

// On a device whose blocks may have more than 48 KB of shared memory (the opt-in: 163 KB on
// sm_80), the rule samples pipelines 2 to 4 deep; kernels beyond 48 KB keep their shared arrays
// in one pool sized at launch (shared_layout.hpp; its offsets are PoCL-checked in
// shared_pool_test.cpp), which compiles where 48 KB of static arrays would not.
TEST(CudaSchedules, DeepPipelinesBeyond48KbOfSharedMemoryUseThePoolAndCompile) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TuneAttributes attrs = std_rules_test::gpu_set().attrs;
  const int64_t opt_in = 163 * 1024;
  attrs["max_shared_memory_per_block"] = opt_in;
  Function func = make_workload("matmul(M=4096,N=4096,K=4096,dtype=f16,out_dtype=f32)");
  auto rules = gpu_test::tensor_core_rules(attrs);
  auto postprocs = gpu_test::gpu_postprocs(attrs);
  int accepted = 0, pooled = 0, compiled = 0;
  std::set<int64_t> depths;
  for (const auto& space : generate_design_spaces(func, rules, 1)) {
    if (space->trace().to_json().find("wmma.mma") == std::string::npos) continue;
    for (uint64_t k = 0; k < 30; ++k) {
      std::shared_ptr<Schedule> s;
      if (std_rules_test::sample(func, space->trace(), 1300 + k, false, postprocs, &s) !=
          SampleOutcome::Ok)
        continue;
      ++accepted;
      visit_stmts(s->func().body, [&](const Stmt& x) {
        if (x->kind == StmtKind::For)
          if (auto it = as<ForNode>(x)->annotations.find(kSoftwarePipelineStages);
              it != as<ForNode>(x)->annotations.end())
            depths.insert(std::get<int64_t>(it->second));
        return true;
      });
      sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
      G::GpuSource src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect());
      ASSERT_EQ(src.dynamic_shared_bytes.size(), 1u);
      const int64_t bytes = src.dynamic_shared_bytes[0];
      if (bytes == 0) continue;
      EXPECT_GT(bytes, 48 * 1024);
      EXPECT_LE(bytes, opt_in);
      EXPECT_NE(src.code.find("extern __shared__ __align__(128) unsigned char mt_dynamic_shared"),
                std::string::npos)
          << src.code;
      EXPECT_EQ(src.code.find("__shared__ __align__(32)"), std::string::npos) << src.code;
      // HIP declares its LDS statically whatever the size (the rocm target sizes none at launch).
      G::GpuSource hip = G::write_kernels(G::plan_kernels(p), *G::hip_dialect());
      EXPECT_EQ(hip.dynamic_shared_bytes, std::vector<int64_t>{0});
      EXPECT_EQ(hip.code.find("extern __shared__"), std::string::npos);
      if (++pooled <= 3) compiled += compile_for_sm80_and_sm90(*nvrtc, src.code, p.name, "pool");
    }
  }
  std::printf("[ cuda ] 4096^3 f16, 163 KB blocks: %d of 30 samples accepted, pipeline depths",
              accepted);
  for (int64_t d : depths)
    std::printf(" %lld", static_cast<long long>(d));
  std::printf("; %d beyond 48 KB in a pool, %d compiled\n", pooled, compiled);
  EXPECT_GE(accepted, 15);
  EXPECT_EQ(depths, (std::set<int64_t>{2, 3, 4}));
  EXPECT_GE(pooled, 3);
  EXPECT_EQ(compiled, 6);
}

// The bench's f32 row: the standard GPU spaces of a 4096^3 f32 matmul have samples within the
// device's limits (MultiLevelTiling's bounded thread levels, shared tiles of one k step).
TEST(CudaSchedules, TheBenchSizedF32SpacesHaveSamplesWithinTheLimits) {
  Function func = make_workload("matmul(M=4096,N=4096,K=4096)");
  std_rules_test::Instances in = std_rules_test::instantiate(std_rules_test::gpu_set());
  int accepted = 0, tried = 0;
  std::map<std::string, int> refusals;
  for (const auto& space : generate_design_spaces(func, in.rules, 1))
    for (uint64_t k = 0; k < 50; ++k, ++tried) {
      std::shared_ptr<Schedule> s;
      std::string refused;
      if (std_rules_test::sample(func, space->trace(), 950 + k, false, in.postprocs, &s,
                                 &refused) == SampleOutcome::Ok) {
        ++accepted;
        continue;
      }
      // The reason without its numbers.
      std::string kind;
      for (char c : refused.substr(0, 120))
        if (!std::isdigit(static_cast<unsigned char>(c))) kind += c;
      ++refusals[kind];
    }
  std::printf("[ cuda ] 4096^3 f32: %d of %d samples accepted\n", accepted, tried);
  for (const auto& [why, count] : refusals)
    std::printf("[ cuda ]   %3d refused: %s\n", count, why.c_str());
  EXPECT_GE(accepted * 4, tried);
}

// A vthread loop's per-thread arrays (the accumulator of MultiLevelTiling's SSSRRSRS tiles,
// one copy per virtual thread) stay in registers when the loops over the virtual threads are
// unrolled and the arrays fit (128 words in all; kernel_writer's vthread_loop). ptxas's own
// report on the 4096^3 f32 bench's samples: a stack frame the size of the array before (512
// and 256 bytes for arrays of 128 and 64 floats), none now. Larger arrays stay where they are.
TEST(CudaSchedules, VirtualThreadArraysThatFitInRegistersStayOutOfLocalMemory) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  Function func = make_workload("matmul(M=4096,N=4096,K=4096)");
  std_rules_test::Instances in = std_rules_test::instantiate(std_rules_test::gpu_set());
  const std::regex array(R"(\n\s*float \w+_local\[(\d+)\];)");
  const std::regex stack(R"((\d+) bytes stack frame)");
  int small = 0;
  for (const auto& space : generate_design_spaces(func, in.rules, 1))
    for (uint64_t k = 0; k < 50 && small < 4; ++k) {
      std::shared_ptr<Schedule> s;
      if (std_rules_test::sample(func, space->trace(), 950 + k, false, in.postprocs, &s) !=
          SampleOutcome::Ok)
        continue;
      sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
      std::string src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
      std::smatch m;
      if (!std::regex_search(src, m, array) || std::stoll(m[1]) > 128) continue;
      ++small;
      cuda::NvrtcResult r = nvrtc->compile(src, p.name + ".cu", "sm_90", {"--ptxas-options=-v"});
      ASSERT_TRUE(r.ok) << r.log;
      std::smatch st;
      ASSERT_TRUE(std::regex_search(r.log, st, stack)) << r.log;
      EXPECT_LE(std::stoll(st[1]), 64) << "a " << m[1] << "-float array in local memory:\n"
                                       << r.log << "\n"
                                       << src;
    }
  std::printf("[ cuda ] 4096^3 f32: %d samples with per-thread arrays of 128 floats or less\n",
              small);
  EXPECT_GE(small, 2);
}

// The cuda target's limit on a thread's arrays (255 registers of 4 bytes, a copy per virtual
// thread counted): VerifyGPUCode refuses the samples whose accumulator could only live in local
// memory, with the reason, and keeps enough of the space to search.
TEST(CudaSchedules, ArraysBeyondAThreadsRegistersAreRefusedWithTheReason) {
  Function func = make_workload("matmul(M=4096,N=4096,K=4096)");
  std_rules_test::ComponentSet set = std_rules_test::gpu_set();
  set.attrs["max_local_memory_per_block"] = int64_t{255 * 4};
  std_rules_test::Instances in = std_rules_test::instantiate(set);
  const std::regex array(R"(\n\s*float \w+_local\[(\d+)\];)");
  int accepted = 0, refused_local = 0, tried = 0;
  for (const auto& space : generate_design_spaces(func, in.rules, 1))
    for (uint64_t k = 0; k < 50; ++k, ++tried) {
      std::shared_ptr<Schedule> s;
      std::string refused;
      if (std_rules_test::sample(func, space->trace(), 950 + k, false, in.postprocs, &s,
                                 &refused) != SampleOutcome::Ok) {
        refused_local += refused.find("bytes of local memory (limit 1020)") != std::string::npos;
        continue;
      }
      ++accepted;
      sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
      std::string src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
      for (std::sregex_iterator it(src.begin(), src.end(), array), end; it != end; ++it)
        EXPECT_LE(std::stoll((*it)[1]), 255) << src;
    }
  std::printf("[ cuda ] 4096^3 f32 within 255 registers a thread: %d of %d samples accepted, %d "
              "refused for their arrays\n",
              accepted, tried, refused_local);
  EXPECT_GT(refused_local, 0);
  EXPECT_GE(accepted * 5, tried);
}

} // namespace
} // namespace mt
