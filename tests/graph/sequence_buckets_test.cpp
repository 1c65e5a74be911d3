// Sequence-length buckets: a run padded into a longer bucket gives, for its real positions,
// what a model compiled for exactly its length gives -- a causal decoder without a mask, an
// encoder with its padding mask -- and a sequence longer than every bucket is refused.
#include "core/graph/sequence_buckets.h"

#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

Config tiny(const std::string& name) {
  return load_config_file(layer_config_registry(host()),
                          std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/" + name);
}

NDArray ids_of(const std::vector<int32_t>& ids, int64_t batch) {
  const auto s = static_cast<int64_t>(ids.size());
  NDArray a(DType::i32(), {batch, s});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < s; ++t)
      a.data_as<int32_t>()[b * s + t] = ids[static_cast<size_t>((t + 3 * b) % s)];
  return a;
}

struct Exact {
  ModelGraph graph;
  std::unique_ptr<ModelExecutor> exec;
  Exact(const Config& c, int64_t batch, int64_t seq, bool mask,
        const std::map<std::string, NDArray>& params, bool types = false) {
    graph = BucketedModel::graph_for(host(), c, batch, seq, mask, types);
    exec = std::make_unique<ModelExecutor>(graph, fuse(graph.outputs), llvm());
    exec->set_params(params);
  }
};

KernelSelector untuned_selector() {
  return KernelSelector(host(), KernelSelectionOptions{});
}

TEST(SequenceBuckets, DecoderPaddedIntoALongerBucketMatchesTheExactLength) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g = BucketedModel::graph_for(host(), c, 2, 1, false);
  std::map<std::string, NDArray> params = init_params(g.params, 5);
  KernelSelector sel = untuned_selector();
  BucketedModel model(host(), c, {4, 8, 16}, 2, false, sel, params);
  std::vector<int32_t> tokens = {5, 60, 0, 17, 17, 2, 9}; // 7 tokens: bucket 8
  EXPECT_EQ(model.bucket_for(7).seq, 8);
  EXPECT_EQ(model.bucket_for(8).seq, 8);
  EXPECT_EQ(model.bucket_for(1).seq, 4);
  NDArray ids = ids_of(tokens, 2);
  std::vector<NDArray> got = model.run(ids);
  Exact exact(c, 2, 7, false, params);
  std::vector<NDArray> want = exact.exec->run({ids});
  ASSERT_EQ(got.at(0).shape(), want.at(0).shape());
  std::string why;
  EXPECT_TRUE(allclose(got[0], want[0], 1e-4, 1e-5, &why)) << why;
}

TEST(SequenceBuckets, EncoderPaddedIntoALongerBucketMatchesTheExactLength) {
  Config c = tiny("tiny-bert.json");
  ModelGraph g = BucketedModel::graph_for(host(), c, 1, 1, true);
  std::map<std::string, NDArray> params = init_params(g.params, 6);
  KernelSelector sel = untuned_selector();
  BucketedModel model(host(), c, {16, 8}, 1, true, sel, params);
  NDArray ids = ids_of({3, 52, 7, 7, 1}, 1);
  NDArray mask(DType::f32(), {1, 5});
  mask.fill(1.0);
  std::vector<NDArray> got = model.run(ids, &mask);
  Exact exact(c, 1, 5, true, params);
  std::vector<NDArray> want = exact.exec->run({ids, mask});
  ASSERT_EQ(got.at(0).shape(), want.at(0).shape());
  std::string why;
  EXPECT_TRUE(allclose(got[0], want[0], 1e-4, 1e-5, &why)) << why;
}

// With token types (a sentence pair): padded with type 0, the real positions as the exact
// length's; and not as the same model without types (they are read).
TEST(SequenceBuckets, EncoderWithTokenTypesPaddedIntoALongerBucketMatchesTheExactLength) {
  Config c = tiny("tiny-bert.json");
  ModelGraph g = BucketedModel::graph_for(host(), c, 1, 1, true, true);
  std::map<std::string, NDArray> params = init_params(g.params, 6);
  KernelSelector sel = untuned_selector();
  BucketedModel model(host(), c, {16, 8}, 1, true, sel, params, true);
  NDArray ids = ids_of({3, 52, 7, 7, 1}, 1);
  NDArray mask(DType::f32(), {1, 5});
  mask.fill(1.0);
  NDArray types = ids_of({0, 0, 0, 1, 1}, 1);
  std::vector<NDArray> got = model.run(ids, &mask, &types);
  Exact exact(c, 1, 5, true, params, true);
  std::vector<NDArray> want = exact.exec->run({ids, mask, types});
  ASSERT_EQ(got.at(0).shape(), want.at(0).shape());
  std::string why;
  EXPECT_TRUE(allclose(got[0], want[0], 1e-4, 1e-5, &why)) << why;
  std::vector<NDArray> type0 = model.run(ids, &mask);
  EXPECT_FALSE(allclose(got[0], type0.at(0), 1e-4, 1e-5, &why));
  NDArray short_types = ids_of({0, 1}, 1);
  EXPECT_THROW(model.run(ids, &mask, &short_types), std::invalid_argument);
}

TEST(SequenceBuckets, ALongerSequenceThanEveryBucketIsRefused) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g = BucketedModel::graph_for(host(), c, 1, 1, false);
  KernelSelector sel = untuned_selector();
  BucketedModel model(host(), c, {4}, 1, false, sel, init_params(g.params, 1));
  try {
    model.run(ids_of({1, 2, 3, 4, 5}, 1));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("longer than the largest bucket (4)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(BucketedModel(host(), c, {4, 4}, 1, false, sel, {}), std::invalid_argument);
}

} // namespace
} // namespace mt
