// The prefill's logits of the last position only (core/graph/last_position.h): for every
// prompt length in a padded bucket the one row equals the row of the prefill that computes
// every position; a position out of the bucket is clamped, not read out of bounds; the
// states' rows are untouched; a first output that is not logits is left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/generator.h"
#include "core/graph/last_position.h"
#include "core/graph/layer_registry.h"
#include "core/graph/model_executor.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using graph_test::host;

constexpr int64_t kSeq = 5;

Config tiny_gpt() {
  return load_config_file(layer_config_registry(host()),
                          std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/tiny-gpt.json");
}

struct PrefillRun {
  ModelGraph graph;
  std::unique_ptr<ModelExecutor> exec;
  std::map<std::string, NDArray> params;

  explicit PrefillRun(ModelGraph g) : graph(std::move(g)) {
    exec = std::make_unique<ModelExecutor>(graph, fuse(graph.outputs), graph_test::llvm());
    params = init_params(graph.params, 1);
    exec->set_params(params);
  }
  // Inputs: the ids (a prompt of `n` tokens, padded with 0), and the last position if the
  // graph takes one.
  void execute(int64_t n, int32_t last) {
    std::vector<NDArray> in(graph.inputs.size());
    in[0] = NDArray(DType::i32(), {1, kSeq});
    for (int64_t t = 0; t < kSeq; ++t)
      in[0].data_as<int32_t>()[t] = t < n ? static_cast<int32_t>(7 * t + 3) : 0;
    if (graph.last_position_input != SIZE_MAX) {
      in[graph.last_position_input] = NDArray(DType::i32(), {1});
      in[graph.last_position_input].data_as<int32_t>()[0] = last;
    }
    exec->execute(in);
  }
};

void check_last_row(const Config& config) {
  PrefillRun all(instantiate_model(
      host(), config, {te::placeholder({1, kSeq}, DType::i32(), "ids")}, BuildMode::prefill()));
  PrefillRun one(Generator::prefill_graph(host(), config, kSeq));
  ASSERT_NE(one.graph.last_position_input, SIZE_MAX);
  ASSERT_EQ(all.graph.last_position_input, SIZE_MAX);
  EXPECT_EQ(one.graph.outputs[0].shape(),
            (std::vector<int64_t>{1, 1, all.graph.outputs[0].shape()[2]}));
  ASSERT_EQ(one.graph.outputs.size(), all.graph.outputs.size()); // the states' rows stay
  const int64_t vocab = all.graph.outputs[0].shape()[2];
  auto expect_row = [&](int64_t n, int32_t last, int64_t row) {
    all.execute(n, 0);
    one.execute(n, last);
    const float* want = all.exec->output(0).data_as<float>() + row * vocab;
    const float* got = one.exec->output(0).data_as<float>();
    for (int64_t v = 0; v < vocab; ++v)
      ASSERT_NEAR(got[v], want[v], 1e-5 * (1 + std::abs(want[v])))
          << "prompt " << n << ", position " << last << ", logit " << v;
    for (size_t o = 1; o < all.graph.outputs.size(); ++o) { // keys and values: unchanged
      const NDArray &a = all.exec->output(o), &b = one.exec->output(o);
      for (int64_t i = 0; i < a.num_elements(); ++i)
        ASSERT_EQ(a.data_as<float>()[i], b.data_as<float>()[i]) << "output " << o;
    }
  };
  for (int64_t n = 1; n <= kSeq; ++n)
    expect_row(n, static_cast<int32_t>(n - 1), n - 1);
  expect_row(kSeq, 99, kSeq - 1); // clamped into the bucket
  expect_row(kSeq, -4, 0);
}

TEST(LastPosition, ThePrefillsOneRowIsTheLastPositionsLogits) {
  check_last_row(tiny_gpt());
}

// Soft-capped logits (Gemma 2's cap * tanh(logits / cap)): the LM head inside is kept to the
// one row too, and the cap applied to it.
TEST(LastPosition, ASoftCapOfTheLogitsKeepsTheOneRow) {
  Config capped = tiny_gpt();
  capped.set("final_logit_softcap", 0.5);
  check_last_row(capped);
  ModelGraph g = Generator::prefill_graph(host(), capped, kSeq);
  // The cap reads the LM head's product itself, of one row (not a row gathered from a product
  // over every position).
  ASSERT_EQ(g.outputs[0]->inputs.size(), 1u);
  const te::Tensor head = g.outputs[0]->inputs[0];
  EXPECT_TRUE(head->reduce.has_value()) << "the cap reads " << head.name();
  EXPECT_EQ(head.shape()[1], 1);
}

TEST(LastPosition, AFirstOutputThatIsNotLogitsIsLeftAlone) {
  ModelGraph g;
  g.inputs = {te::placeholder({4}, DType::f32(), "x")};
  g.outputs = {g.inputs[0]};
  g.num_root_outputs = 1;
  EXPECT_FALSE(keep_last_position_logits(g));
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.last_position_input, SIZE_MAX);
}

} // namespace
} // namespace mt
