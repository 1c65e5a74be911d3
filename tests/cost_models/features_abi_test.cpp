// ABI 1.1 schedule_features: the host's per-store features of a schedule, as a plugin sees
// them, are exactly core's extract_feature_matrix of the same function, cached per version of
// the function and recomputed when a primitive changes it.
#include <cmath>
#include <string>

#include "core/plugin/host_api.h"
#include "core/features/features.h"
#include "cost_models_test_util.h"

namespace mt::cost_models_test {
namespace {

struct Features {
  const float* data = nullptr;
  size_t rows = 0, cols = 0;
};

Features features_of(mt_schedule* h) {
  Features f;
  mt_status st = host_api()->schedule_features(h, &f.data, &f.rows, &f.cols);
  if (st != MT_OK) throw std::runtime_error(host_api()->last_error());
  return f;
}

void expect_equal(const Features& got, const FeatureMatrix& want) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  ASSERT_EQ(got.cols, static_cast<size_t>(kFeaturesPerStore));
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_EQ(got.data[i], want.data[i])
        << "row " << i / want.cols << " feature " << feature_names()[i % want.cols];
}

TEST(ScheduleFeatures, AreCoresFeaturesOfSampledCandidates) {
  ASSERT_TRUE(MT_HAS_FIELD(host_api(), mt_host_api, schedule_features));
  auto target = make_target();
  for (const char* spec : {"matmul(M=64,N=64,K=64)", "softmax(M=4,N=64)"}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    auto cands = sample_candidates(f, *target, 6, 3);
    ASSERT_FALSE(cands.empty());
    for (const auto& c : cands) {
      mt_schedule* h = make_schedule_handle(c);
      Features got = features_of(h);
      EXPECT_GT(got.rows, 0u);
      expect_equal(got, extract_feature_matrix(c->func()));
      host_api()->schedule_release(h);
    }
  }
}

TEST(ScheduleFeatures, AreCachedUntilTheScheduleChanges) {
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=32,N=32,K=32)"), 1);
  mt_schedule* h = make_schedule_handle(sch);
  Features a = features_of(h);
  Features b = features_of(h);
  EXPECT_EQ(a.data, b.data) << "second call recomputed instead of using the cache";
  expect_equal(a, extract_feature_matrix(sch->func()));
  std::vector<float> before(a.data, a.data + a.rows * a.cols);

  // A primitive through the ABI: parallelise the outer loop of the matmul block.
  mt_block_rv blocks[4];
  size_t nb = 0;
  ASSERT_EQ(host_api()->get_child_blocks(h, {MT_LOOP_ROOT}, blocks, 4, &nb), MT_OK)
      << host_api()->last_error();
  ASSERT_EQ(nb, 1u);
  mt_block_rv block = blocks[0];
  mt_loop_rv loops[8];
  size_t n = 0;
  ASSERT_EQ(host_api()->get_loops(h, block, loops, 8, &n), MT_OK) << host_api()->last_error();
  ASSERT_EQ(host_api()->parallel(h, loops[0]), MT_OK) << host_api()->last_error();
  Features c = features_of(h);
  expect_equal(c, extract_feature_matrix(sch->func()));
  std::vector<float> after(c.data, c.data + c.rows * c.cols);
  EXPECT_NE(before, after) << "features did not change after parallel";
  // Every store is now inside the parallel loop of extent 32 (log-scaled like the host does).
  const size_t prod = static_cast<size_t>(feature_index("parallel.prod"));
  for (size_t r = 0; r < c.rows; ++r)
    EXPECT_FLOAT_EQ(c.data[r * c.cols + prod], std::log2(33.0f)) << "row " << r;
  host_api()->schedule_release(h);
}

TEST(ScheduleFeatures, RejectNullArguments) {
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"), 1);
  mt_schedule* h = make_schedule_handle(sch);
  const float* d = nullptr;
  size_t r = 0, c = 0;
  EXPECT_EQ(host_api()->schedule_features(nullptr, &d, &r, &c), MT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(host_api()->last_error()).find("schedule_features"), std::string::npos);
  EXPECT_EQ(host_api()->schedule_features(h, nullptr, &r, &c), MT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(host_api()->schedule_features(h, &d, nullptr, &c), MT_ERROR_INVALID_ARGUMENT);
  host_api()->schedule_release(h);
}

} // namespace
} // namespace mt::cost_models_test
