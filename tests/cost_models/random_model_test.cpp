// cost.Random through the host: seeded, candidate-independent scores in [0, 1), configuration
// errors that name the key, and save/load reported as unsupported (the SDK's default).
#include <string>

#include "cost_models_test_util.h"

namespace mt::cost_models_test {
namespace {

std::vector<std::shared_ptr<Schedule>> some_schedules(size_t n) {
  std::vector<std::shared_ptr<Schedule>> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"), i));
  return out;
}

TEST(RandomCostModel, ScoresAreSeededUniformDraws) {
  auto cands = some_schedules(64);
  auto a = host().create_cost_model("cost.Random", R"({"seed": 7})")->predict(cands);
  auto b = host().create_cost_model("cost.Random", R"({"seed": 7})")->predict(cands);
  auto c = host().create_cost_model("cost.Random", R"({"seed": 8})")->predict(cands);
  ASSERT_EQ(a.size(), cands.size());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0;
  for (double s : a) {
    EXPECT_GE(s, 0.0);
    EXPECT_LT(s, 1.0);
    mean += s / static_cast<double>(a.size());
  }
  EXPECT_GT(mean, 0.3);
  EXPECT_LT(mean, 0.7);
  // Default configuration works, and update is accepted (and ignored).
  auto d = host().create_cost_model("cost.Random");
  d->update(cands, std::vector<double>(cands.size(), 1e-3));
  EXPECT_EQ(d->predict(cands).size(), cands.size());
}

TEST(RandomCostModel, BadConfigurationNamesTheKey) {
  try {
    host().create_cost_model("cost.Random", R"({"sead": 7})");
    FAIL() << "unknown key accepted";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'sead'"), std::string::npos) << e.what();
  }
  try {
    host().create_cost_model("cost.Random", R"({"seed": "x"})");
    FAIL() << "string seed accepted";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'seed'"), std::string::npos) << e.what();
  }
}

TEST(RandomCostModel, SaveAndLoadAreUnsupported) {
  auto m = host().create_cost_model("cost.Random");
  const std::string path = ::testing::TempDir() + "random_model.json";
  try {
    m->save(path);
    FAIL() << "save succeeded";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
    EXPECT_EQ(e.operation(), "save");
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->load(path), PluginError);
}

} // namespace
} // namespace mt::cost_models_test
