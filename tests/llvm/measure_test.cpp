// The measurer (core/measure/measure.h) with the real LLVM CPU target: kernels that segfault,
// divide by zero or never end each cost one failed trial with the right reason while the
// other candidates of the batch are still measured; wrong kernels get no time; builds time
// out; candidates sampled from the standard rules measure Ok; a model's weights go packed to
// the kernels that take them so. Also the target's defaults.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ir/parser.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/measure/cold_inputs.h"
#include "core/measure/implementation_compare.h"
#include "core/measure/measure.h"
#include "core/plugin/plugin_host.h"
#include "core/search/design_space.h"
#include "core/workload/flop_count.h"
#include "core/workload/library.h"

#if defined(METATUNE_LLVM_CPU_PLUGIN) && defined(METATUNE_STD_RULES_PLUGIN)
namespace mt {
namespace {

PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    for (const char* path : {METATUNE_LLVM_CPU_PLUGIN, METATUNE_STD_RULES_PLUGIN}) {
      const PluginRecord& r = p->load(path);
      if (!r.loaded()) throw std::runtime_error("plugin refused: " + r.message);
    }
    return p;
  }();
  return *h;
}

std::unique_ptr<PluginTarget> make_target() {
  return host().create_target("llvm.cpu", R"({"num_threads": 2})");
}

// The workload: B = A + 1 over 64 ints (random inputs are small integers in [-4, 4]).
const char* kWorkload = R"(
func add_one(A: i32[64], B: i32[64]) {
  for i in 64 {
    block add(vi: S[64] = i) { B[vi] = A[vi] + 1i32 }
  }
})";

// The same computation written as a loop program (a correct candidate that skips lowering).
const char* kGoodLowered = R"(
lowered func add_one(A: i32[64], B: i32[64]) {
  for i in 64 parallel { B[i] = A[i] + 1i32 }
})";

// Computes something else.
const char* kWrong = R"(
lowered func add_two(A: i32[64], B: i32[64]) {
  for i in 64 { B[i] = A[i] + 2i32 }
})";

// Stores 4 TiB past B: unmapped (or non-canonical) on every x86-64 process.
const char* kSegfault = R"(
lowered func wild_store(A: i32[64], B: i32[64]) {
  for i in 64 { B[i + 1099511627776] = A[i] }
})";

// Divides by the inputs, one of which is zero: integer division traps.
const char* kDivByZero = R"(
lowered func div_by_input(A: i32[64], B: i32[64]) {
  for i in 64 { B[i] = 100i32 / A[i] }
})";

// 2^60 iterations of a recurrence whose result is stored: nothing to fold or delete.
const char* kEndless = R"(
lowered func endless(A: i32[64], B: i32[64]) {
  for i in 64 {
    B[i] = 0i32
    for k in 1152921504606846976 { B[i] = B[i] * 3i32 + A[k % 64] }
  }
})";

Function parse(const char* text) {
  return parse_function(text, "measure_test");
}

MeasureOptions quick_options() {
  MeasureOptions o;
  o.build_timeout_s = 60; // a loaded 2-core machine builds slowly; the tests never wait for it
  o.run_timeout_s = 1.5;
  o.repeats = 2;
  o.min_repeat_seconds = 0.005;
  return o;
}

bool has_zero_input(const Reference& ref) {
  for (int64_t i = 0; i < ref.args[0].num_elements(); ++i)
    if (ref.args[0].get_int(i) == 0) return true;
  return false;
}

void expect_measured_ok(const MeasureResult& r, int repeats) {
  EXPECT_EQ(r.status, MeasureStatus::Ok) << r.error;
  EXPECT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.run_secs.size(), static_cast<size_t>(repeats));
  for (double t : r.run_secs)
    EXPECT_GT(t, 0);
  EXPECT_GT(r.build_seconds, 0);
}

TEST(MeasureReference, InputsAreSeededAndOutputsAreTheInterpretersResult) {
  Function f = parse(kWorkload);
  Reference a = Reference::compute(f, 1), b = Reference::compute(f, 1),
            c = Reference::compute(f, 2);
  ASSERT_EQ(a.args.size(), 2u);
  EXPECT_EQ(a.is_output, (std::vector<bool>{false, true}));
  EXPECT_TRUE(allclose(a.args[0], b.args[0], 0, 0));
  EXPECT_FALSE(allclose(a.args[0], c.args[0], 0, 0));
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(a.args[1].get_int(i), a.args[0].get_int(i) + 1) << i;
  std::vector<NDArray> fresh = a.fresh_args();
  EXPECT_TRUE(allclose(fresh[0], a.args[0], 0, 0));
  EXPECT_EQ(fresh[1].get_int(0), -77); // never the result of any candidate on these inputs
  EXPECT_GE(a.compute_seconds, 0);
}

// Slicing the interpreter's work over threads must not change a bit of any workload's result,
// including workloads with intermediates and several loop nests (which run in order).
TEST(MeasureReference, ThreadedComputeIsBitIdenticalToSerial) {
  for (const auto& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    Reference serial = Reference::compute(f, 3, 1), threaded = Reference::compute(f, 3, 3);
    ASSERT_EQ(serial.args.size(), threaded.args.size());
    for (size_t i = 0; i < serial.args.size(); ++i) {
      ASSERT_EQ(serial.args[i].nbytes(), threaded.args[i].nbytes());
      EXPECT_EQ(
          std::memcmp(serial.args[i].data(), threaded.args[i].data(), serial.args[i].nbytes()), 0)
          << "param " << i;
    }
  }
}

// Cold inputs (core/measure/cold_inputs.h): copies of the inputs, each call's apart from the
// next call's, as many as span the bytes asked for; the outputs are the caller's one set.
TEST(MeasureColdInputs, CopiesHoldTheInputsAndSpanTheBytesAskedFor) {
  Reference ref = Reference::compute(parse(kWorkload));
  ColdInputs cold(ref.args, ref.is_output, 64 * 1024);
  EXPECT_EQ(cold.input_bytes(), 256u); // A: 64 x i32
  EXPECT_EQ(cold.copies(), 256u);      // 64 KiB / 256 bytes
  EXPECT_TRUE(cold.holds(ref.args, ref.is_output));
  std::vector<NDArray> outputs = ref.fresh_args();
  std::set<const void*> inputs;
  for (size_t i = 0; i < cold.copies(); ++i) {
    std::vector<NDArray*> a = cold.arguments(i, outputs);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[1], &outputs[1]);
    EXPECT_TRUE(allclose(*a[0], ref.args[0], 0, 0)) << "copy " << i;
    inputs.insert(a[0]->data());
  }
  EXPECT_EQ(inputs.size(), cold.copies());
  EXPECT_EQ(cold.arguments(cold.copies(), outputs)[0]->data(),
            cold.arguments(0, outputs)[0]->data());
  std::vector<NDArray> other = ref.args;
  other[0].set_int(5, other[0].get_int(5) + 1);
  EXPECT_FALSE(cold.holds(other, ref.is_output));
  // At least two copies, at most 4096.
  EXPECT_EQ(ColdInputs(ref.args, ref.is_output, 1).copies(), 2u);
  EXPECT_EQ(ColdInputs(ref.args, ref.is_output, size_t{1} << 30).copies(), 4096u);
}

// The timing loop takes the next copy for every call: with each copy's input set to its own
// index, the output of the last call says which copy it read.
TEST(MeasureColdInputs, EachTimedCallTakesTheNextCopy) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  std::unique_ptr<PluginModule> m = target->build(parse(kGoodLowered));
  ColdInputs cold(ref.args, ref.is_output, 8 * 256);
  ASSERT_EQ(cold.copies(), 8u);
  std::vector<NDArray> out = ref.fresh_args();
  for (size_t c = 0; c < cold.copies(); ++c)
    cold.arguments(c, out)[0]->fill(static_cast<double>(c) * 10);
  std::vector<double> secs = cold.time(*m, out, 3, 0); // one call per repeat: copies 0, 1, 2
  ASSERT_EQ(secs.size(), 3u);
  for (double t : secs)
    EXPECT_GT(t, 0);
  EXPECT_EQ(out[1].get_int(0), 21);
  EXPECT_EQ(out[1].get_int(63), 21);
  cold.time(*m, out, 6, 0); // copies 3..7, then 0 again
  EXPECT_EQ(out[1].get_int(0), 1);
}

// The measurer with cold inputs, isolated and in process: the check still sees the kernel's
// result on the reference inputs, a wrong kernel still gets no time.
TEST(MeasureColdInputs, TheMeasurerChecksAndTimesOnColdInputs) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  MeasureOptions o = quick_options();
  o.cold_inputs = true;
  o.cold_inputs_bytes = 1 << 20;
  for (bool isolate : {true, false}) {
    SCOPED_TRACE(isolate ? "isolated" : "in process");
    o.isolate = isolate;
    auto results = Measurer(*target, o).measure(ref, {parse(kGoodLowered), parse(kWrong)});
    ASSERT_EQ(results.size(), 2u);
    expect_measured_ok(results[0], o.repeats);
    EXPECT_EQ(results[1].status, MeasureStatus::WrongResult);
    EXPECT_TRUE(results[1].run_secs.empty());
  }
}

// Which workloads the "memory-bound" policy times cold: under 4 flops per byte of input.
TEST(MeasureColdInputs, MemoryBoundIsUnderFourFlopsPerInputByte) {
  Function gemv = make_workload("dense(M=1,N=256,K=256,bias=0,act=none)");
  Function gemm = make_workload("matmul(M=128,N=256,K=256)");
  EXPECT_TRUE(memory_bound(gemv, count_flops(gemv)));  // 0.5 flops per byte
  EXPECT_FALSE(memory_bound(gemm, count_flops(gemm))); // about 43
  EXPECT_TRUE(cold_inputs_under(ColdPolicy::on, gemm, count_flops(gemm)));
  EXPECT_FALSE(cold_inputs_under(ColdPolicy::off, gemv, count_flops(gemv)));
  EXPECT_TRUE(cold_inputs_under(ColdPolicy::memory_bound, gemv, count_flops(gemv)));
  EXPECT_FALSE(cold_inputs_under(ColdPolicy::memory_bound, gemm, count_flops(gemm)));
}

// A database's setting read back: its words, none = off (an empty database), and a value of a
// newer metatune is an error naming the database rather than times taken for hot ones.
TEST(MeasureColdInputs, PoliciesReadFromADatabaseSetting) {
  for (ColdPolicy p : {ColdPolicy::off, ColdPolicy::on, ColdPolicy::memory_bound})
    EXPECT_EQ(cold_policy_of(std::string(to_string(p)), "t.db"), p);
  EXPECT_EQ(to_string(ColdPolicy::memory_bound), std::string("memory-bound"));
  EXPECT_EQ(cold_policy_of(std::nullopt, "t.db"), ColdPolicy::off);
  EXPECT_FALSE(parse_cold_policy("auto"));
  try {
    cold_policy_of(std::string("weights-only"), "t.db");
    ADD_FAILURE() << "an unknown policy was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.db"), std::string::npos) << what;
    EXPECT_NE(what.find("'weights-only'"), std::string::npos) << what;
  }
}

TEST(MeasureIsolated, CrashesAndEndlessLoopsCostOneTrialEach) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  ASSERT_TRUE(has_zero_input(ref)) << "the division candidate needs a zero among the inputs";
  MeasureOptions o = quick_options();
  o.parallel_builds = 2;
  Measurer m(*target, o);
  std::vector<Function> cands = {parse(kSegfault), parse(kDivByZero), parse(kEndless),
                                 parse(kGoodLowered), parse(kWorkload)};
  std::vector<int> calls(cands.size(), 0);
  auto results = m.measure(ref, cands, [&](size_t i, const MeasureResult&) { ++calls.at(i); });
  ASSERT_EQ(results.size(), cands.size());
  EXPECT_EQ(calls, std::vector<int>(cands.size(), 1));

  EXPECT_EQ(results[0].status, MeasureStatus::Crashed) << results[0].error;
  EXPECT_EQ(results[0].error, "crashed with SIGSEGV");
  EXPECT_EQ(results[1].status, MeasureStatus::Crashed) << results[1].error;
  EXPECT_EQ(results[1].error, "crashed with SIGFPE");
  EXPECT_EQ(results[2].status, MeasureStatus::RunTimeout) << results[2].error;
  EXPECT_NE(results[2].error.find("1.5 s"), std::string::npos) << results[2].error;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(results[i].run_secs.empty());
    EXPECT_GT(results[i].build_seconds, 0); // they did build
  }
  expect_measured_ok(results[3], o.repeats);
  expect_measured_ok(results[4], o.repeats);
}

TEST(MeasureIsolated, WrongKernelGetsNoTime) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  Measurer m(*target, quick_options());
  auto results = m.measure(ref, {parse(kWrong), parse(kWorkload)});
  EXPECT_EQ(results[0].status, MeasureStatus::WrongResult);
  EXPECT_NE(results[0].error.find("output 1"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].run_secs.empty());
  expect_measured_ok(results[1], quick_options().repeats);

  MeasureOptions unchecked = quick_options();
  unchecked.check = false;
  auto r = Measurer(*target, unchecked).measure(ref, {parse(kWrong)});
  expect_measured_ok(r[0], unchecked.repeats);
}

// A dense layer out[0, i, n] = sum_k x[0, i, k] * w[n, k], as written and as a schedule that
// copies w transposed into a buffer a 16-column panel at a time (`copy` the copy's statement).
const char* kDense = R"(
func dense(w: f32[32, 64], x: f32[1, 32, 64], out: f32[1, 32, 32]) {
  for i in 32 {
    for n in 32 {
      for k in 64 {
        block out(vi: S[32] = i, vn: S[32] = n, vk: R[64] = k) {
          init { out[0, vi, vn] = 0f32 }
          out[0, vi, vn] = out[0, vi, vn] + x[0, vi, vk] * w[vn, vk]
        }
      }
    }
  }
})";
Function dense_copying_w(const std::string& copy) {
  return parse_function(R"(func dense(w: f32[32, 64], x: f32[1, 32, 64], out: f32[1, 32, 32]) {
  buffer w_t: f32[64, 32]
  for jo in 2 parallel {
    for ax1 in 64 {
      for ax0 in 16 vectorized {
        block w_t(vn: S[32] = jo * 16 + ax0, vk: S[64] = ax1) {
          )" + copy + R"(
        }
      }
    }
    for i in 32 {
      for j in 16 {
        for k in 64 {
          block out(vi: S[32] = i, vn: S[32] = jo * 16 + j, vk: R[64] = k) {
            init { out[0, vi, vn] = 0f32 }
            out[0, vi, vn] = out[0, vi, vn] + x[0, vi, vk] * w_t[vk, vn]
          }
        }
      }
    }
  }
})",
                        "measure_test");
}

// A model's weights (MeasureOptions::weights) go packed to a kernel that takes them so -- the
// llvm target's copy of w made once -- and the packed run is the one checked and timed: a
// kernel whose copy reads the wrong elements is caught there. Not with cold inputs, nor for
// a kernel without a copy, nor without weights.
TEST(MeasureIsolated, WeightsGoPackedToKernelsThatTakeThemAndAreCheckedSo) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kDense));
  MeasureOptions o = quick_options();
  o.weights = {true, false, false};
  const Function copying = dense_copying_w("w_t[vk, vn] = w[vn, vk]");
  auto results = Measurer(*target, o).measure(
      ref, {copying, parse(kDense), dense_copying_w("w_t[vk, vn] = w[vn, 63 - vk]")});
  expect_measured_ok(results[0], o.repeats);
  EXPECT_EQ(results[0].packed_args, 1);
  expect_measured_ok(results[1], o.repeats);
  EXPECT_EQ(results[1].packed_args, 0);
  EXPECT_EQ(results[2].status, MeasureStatus::WrongResult) << results[2].error;
  EXPECT_EQ(results[2].packed_args, 1);

  MeasureOptions cold = o;
  cold.cold_inputs = true;
  cold.cold_inputs_bytes = 1 << 20;
  auto r = Measurer(*target, cold).measure(ref, {copying});
  expect_measured_ok(r[0], o.repeats);
  EXPECT_EQ(r[0].packed_args, 0);
  MeasureOptions none = quick_options();
  r = Measurer(*target, none).measure(ref, {copying});
  expect_measured_ok(r[0], o.repeats);
  EXPECT_EQ(r[0].packed_args, 0);
}

// The side-by-side comparison times the weights packed too (each side in its own worker).
TEST(CompareInterleaved, TimesAKernelWithItsWeightsPacked) {
  auto target = make_target();
  CompareOptions o;
  o.repeats = 2;
  o.min_repeat_seconds = 0.005;
  o.weights = {true, false, false};
  CompareResult c = compare_interleaved(*target, dense_copying_w("w_t[vk, vn] = w[vn, vk]"),
                                        *target, parse(kDense), o);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.a_secs.size(), 2u);
  EXPECT_TRUE(std::isfinite(c.a_median) && c.a_median > 0);
  EXPECT_TRUE(std::isfinite(c.b_median) && c.b_median > 0);
}

// A target whose products round to bf16 is checked at bf16's precision
// (with_bf16_products_tolerance): an output off by rounding-sized amounts passes, one off by a
// tenth of its scale does not; tolerances the user gave are kept.
TEST(MeasureIsolated, Bf16ProductsToleranceTakesRoundingButNotWrongKernels) {
  const char* workload = R"(
func triple(A: f32[256], B: f32[256]) {
  for i in 256 {
    block t(vi: S[256] = i) { B[vi] = A[vi] * 3f32 }
  }
})";
  // Off by 0.4 % of the largest output: what bf16-rounded products of a long sum are off by.
  const char* rounded = R"(
lowered func triple(A: f32[256], B: f32[256]) {
  for i in 256 { B[i] = A[i] * 3f32 + 0.012f32 }
})";
  // Off by a tenth: a wrong kernel.
  const char* wrong = R"(
lowered func triple(A: f32[256], B: f32[256]) {
  for i in 256 { B[i] = A[i] * 3.3f32 }
})";
  auto target = make_target();
  Reference ref = Reference::compute(parse(workload));
  MeasureOptions bf16 = with_bf16_products_tolerance(quick_options());
  auto results = Measurer(*target, bf16).measure(ref, {parse(rounded), parse(wrong)});
  expect_measured_ok(results[0], bf16.repeats);
  EXPECT_EQ(results[1].status, MeasureStatus::WrongResult) << results[1].error;
  MeasureOptions given = quick_options();
  given.tolerance_given = true;
  given = with_bf16_products_tolerance(given);
  EXPECT_EQ(given.atol_of_largest, 0);
  EXPECT_EQ(Measurer(*target, given).measure(ref, {parse(rounded)})[0].status,
            MeasureStatus::WrongResult);
}

// A candidate of 400 blocks: compiling it takes LLVM tens of milliseconds, so that a worker
// cannot build it before the measurer first looks at the clock (kWorkload alone was once built
// within the millisecond, in a worker forked from a process with LLVM already set up).
std::string slow_to_build() {
  std::string body;
  for (int b = 0; b < 400; ++b)
    body += "    block add" + std::to_string(b) + "(vi: S[64] = i) { B[vi] = A[vi] + " +
            std::to_string(b) + "i32 }\n";
  return "func add_many(A: i32[64], B: i32[64]) {\n  for i in 64 {\n" + body + "  }\n}";
}

TEST(MeasureIsolated, SlowBuildTimesOut) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  MeasureOptions o = quick_options();
  o.build_timeout_s = 0.001;
  const std::string slow = slow_to_build();
  auto results = Measurer(*target, o).measure(ref, {parse(slow.c_str()), parse(slow.c_str())});
  for (const auto& r : results) {
    EXPECT_EQ(r.status, MeasureStatus::BuildTimeout) << r.error;
    EXPECT_NE(r.error.find("0.001 s"), std::string::npos) << r.error;
  }
}

TEST(MeasureIsolated, BuildErrorsAreReported) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  // The kernel's signature differs from the workload's: it builds, but cannot be called with
  // the workload's arguments.
  Function other = parse(R"(
lowered func other(A: i32[32], B: i32[32]) {
  for i in 32 { B[i] = A[i] }
})");
  auto results = Measurer(*target, quick_options()).measure(ref, {other});
  EXPECT_EQ(results[0].status, MeasureStatus::RunError);
  EXPECT_NE(results[0].error.find("wrong dtype or shape"), std::string::npos) << results[0].error;
}

TEST(MeasureIsolated, ParallelBuildsGiveTheSameResults) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  std::vector<Function> cands = {parse(kGoodLowered), parse(kWrong), parse(kDivByZero),
                                 parse(kWorkload), parse(kSegfault)};
  std::map<int, std::vector<MeasureResult>> by_parallel;
  for (int p : {1, 2}) {
    MeasureOptions o = quick_options();
    o.parallel_builds = p;
    by_parallel[p] = Measurer(*target, o).measure(ref, cands);
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    const MeasureResult &a = by_parallel[1][i], &b = by_parallel[2][i];
    EXPECT_EQ(a.status, b.status) << i << ": " << a.error << " / " << b.error;
    EXPECT_EQ(a.error, b.error) << i;
    EXPECT_EQ(a.run_secs.size(), b.run_secs.size()) << i;
  }
  EXPECT_EQ(by_parallel[1][0].status, MeasureStatus::Ok);
  EXPECT_EQ(by_parallel[1][1].status, MeasureStatus::WrongResult);
  EXPECT_EQ(by_parallel[1][2].status, MeasureStatus::Crashed);
  EXPECT_EQ(by_parallel[1][3].status, MeasureStatus::Ok);
  EXPECT_EQ(by_parallel[1][4].status, MeasureStatus::Crashed);
}

TEST(MeasureInProcess, ChecksLikeTheIsolatedMeasurer) {
  auto target = make_target();
  Reference ref = Reference::compute(parse(kWorkload));
  MeasureOptions o = quick_options();
  o.isolate = false;
  o.flush_cache = true;
  auto results = Measurer(*target, o).measure(ref, {parse(kWrong), parse(kGoodLowered)});
  EXPECT_EQ(results[0].status, MeasureStatus::WrongResult);
  expect_measured_ok(results[1], o.repeats);
}

// The measurer's defaults on the target's own default set: the std rules initialised with
// the target's description, a matmul sampled from every design space. The parent runs a
// parallel kernel first, so its thread pool exists when the workers are forked.
TEST(MeasureStdRules, SampledMatmulCandidatesMeasureOk) {
  auto target = make_target();
  auto desc = nlohmann::json::parse(target->describe_device());
  TuneAttributes attrs{{"kind", desc["kind"].get<std::string>()},
                       {"num_cores", desc["num_cores"].get<int64_t>()},
                       {"vector_bytes", desc["vector_bytes"].get<int64_t>()}};
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  for (const auto& n : target->default_components(ComponentKind::ScheduleRule)) {
    rules.push_back(host().create_schedule_rule(n));
    rules.back()->initialize(attrs);
  }
  std::vector<std::unique_ptr<PluginPostproc>> postprocs;
  for (const auto& n : target->default_components(ComponentKind::Postproc)) {
    postprocs.push_back(host().create_postproc(n));
    postprocs.back()->initialize(attrs);
  }
  ASSERT_EQ(rules.size(), 7u);
  ASSERT_EQ(postprocs.size(), 3u);

  Function f = make_workload("matmul(M=128,N=96,K=64)");
  Reference ref = Reference::compute(f);
  auto spaces = generate_design_spaces(f, rules, 1);
  ASSERT_FALSE(spaces.empty());
  std::vector<Function> cands;
  bool any_parallel = false;
  for (size_t si = 0; si < spaces.size(); ++si) {
    for (uint64_t seed = 0; seed < 8 && cands.size() < 2 * (si + 1); ++seed) {
      std::shared_ptr<Schedule> s;
      std::string why;
      if (sample_candidate(f, spaces[si]->trace(), 100 + seed, false, postprocs, &s, &why) !=
          SampleOutcome::Ok)
        continue;
      cands.push_back(s->func());
      any_parallel = any_parallel || s->trace().to_json().find("parallel") != std::string::npos;
    }
  }
  ASSERT_GE(cands.size(), 2u);

  MeasureOptions in_process = quick_options();
  in_process.isolate = false;
  auto first = Measurer(*target, in_process).measure(ref, {cands[0]});
  expect_measured_ok(first[0], in_process.repeats);

  MeasureOptions o = quick_options();
  o.run_timeout_s = 5;
  auto results = Measurer(*target, o).measure(ref, cands);
  for (size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE("candidate " + std::to_string(i));
    expect_measured_ok(results[i], o.repeats);
  }
  EXPECT_TRUE(any_parallel) << "no sampled candidate uses a parallel loop";
}

TEST(MeasureTarget, DefaultsAreTheStandardCpuSetAndVectorWidthFollowsFeatures) {
  auto target = make_target();
  EXPECT_EQ(target->default_components(ComponentKind::ScheduleRule),
            (std::vector<std::string>{"std.AutoInline", "std.VectorRFactor", "std.AddRFactor",
                                      "std.MultiLevelTilingAmx", "std.MultiLevelTiling",
                                      "std.ParallelVectorizeUnroll", "std.RandomComputeLocation"}));
  EXPECT_EQ(
      target->default_components(ComponentKind::Postproc),
      (std::vector<std::string>{"std.DisallowDynamicLoop", "std.RewriteParallelVectorizeUnroll",
                                "std.RewriteReductionBlock"}));
  auto mutators = target->default_components(ComponentKind::Mutator);
  EXPECT_EQ(mutators, (std::vector<std::string>{"std.MutateTileSize", "std.MutateComputeLocation",
                                                "std.MutateUnroll", "std.MutateParallel"}));
  // Every default is a registered component.
  for (auto kind : {ComponentKind::ScheduleRule, ComponentKind::Postproc, ComponentKind::Mutator})
    for (const auto& n : target->default_components(kind))
      EXPECT_NE(host().find(kind, n), nullptr) << n;

  auto desc = nlohmann::json::parse(target->describe_device());
  EXPECT_EQ(desc["num_cores"].get<int>(), 2);
  std::vector<std::string> features = desc["features"].get<std::vector<std::string>>();
  auto listed = [&](const char* f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
  EXPECT_EQ(listed("avx512f"), avx512);
  EXPECT_EQ(listed("avx2"), avx2);
  EXPECT_EQ(desc["vector_bytes"].get<int>(), avx512 ? 64
                                             : avx2 ? 32
                                                    : desc["vector_bytes"].get<int>());
  // The register tiles' budget (std.MultiLevelTiling): ymm0-15, or zmm0-31 with AVX-512F.
  EXPECT_EQ(desc["vector_registers"].get<int>(), avx512 ? 32 : 16);
  double total = 0;
  for (const auto& m : mutators)
    total += desc["mutator_probabilities"].at(m).get<double>();
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(desc["mutator_probabilities"]["std.MutateTileSize"].get<double>(), 0.9);

  // A CPU named on the target string implies its features.
  auto zen4 = host().create_target("llvm.cpu", R"({"target": "llvm -mcpu=znver4"})");
  auto zd = nlohmann::json::parse(zen4->describe_device());
  EXPECT_EQ(zd["vector_bytes"].get<int>(), 64);
  EXPECT_EQ(zd["vector_registers"].get<int>(), 32);
  auto zf = zd["features"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(zf.begin(), zf.end(), "avx512vnni"), zf.end());
  auto no512 = host().create_target("llvm.cpu",
                                    R"({"target": "llvm -mcpu=skylake-avx512 -mattr=-avx512f"})");
  auto nd = nlohmann::json::parse(no512->describe_device());
  EXPECT_EQ(nd["vector_bytes"].get<int>(), 32);
  EXPECT_EQ(nd["vector_registers"].get<int>(), 16);
  auto nf = nd["features"].get<std::vector<std::string>>();
  EXPECT_EQ(std::find(nf.begin(), nf.end(), "avx512f"), nf.end());
}

} // namespace
} // namespace mt
#endif
