// cost.XGBoost through the host, on real data: candidates of a 128^3 matmul sampled from the
// std_rules design space and timed by the LLVM CPU target. Trained on 70 of them, it must rank
// the others clearly better than chance and than cost.Random; saved and reloaded it predicts
// the same and keeps learning from the restored data.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cost_models_test_util.h"

#if defined(MT_HAVE_XGBOOST) && defined(MT_LLVM_CPU_PLUGIN)
namespace mt::cost_models_test {
namespace {

using Candidates = std::vector<std::shared_ptr<Schedule>>;

struct Measured {
  Candidates candidates;
  std::vector<double> seconds;
};

Measured measure_candidates(const std::string& spec, size_t count, uint64_t seed) {
  Function f = make_workload(spec);
  std::vector<NDArray> args = random_args(f);
  Candidates candidates = sample_candidates(f, *make_target(), count, seed);
  auto modules = build_all(candidates);
  Measured m;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!modules[i]) continue; // a candidate the target cannot build is no sample
    m.seconds.push_back(measure(*modules[i], args));
    m.candidates.push_back(candidates[i]);
  }
  return m;
}

Candidates slice(const Candidates& v, size_t begin, size_t end) {
  return Candidates(v.begin() + static_cast<std::ptrdiff_t>(begin),
                    v.begin() + static_cast<std::ptrdiff_t>(end));
}
std::vector<double> slice(const std::vector<double>& v, size_t begin, size_t end) {
  return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                             v.begin() + static_cast<std::ptrdiff_t>(end));
}
std::vector<double> throughput(const std::vector<double>& seconds) {
  std::vector<double> out;
  for (double s : seconds)
    out.push_back(1.0 / s);
  return out;
}

TEST(XGBoostCostModel, LearnsToRankRealMatmulCandidatesAndPersists) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  Measured data = measure_candidates("matmul(M=128,N=128,K=128)", 100, 1);
  const double measure_s = std::chrono::duration<double>(clock::now() - t0).count();
  ASSERT_GE(data.candidates.size(), 90u);
  const size_t n_train = 70, n = data.candidates.size();
  Candidates train = slice(data.candidates, 0, n_train), test = slice(data.candidates, n_train, n);
  std::vector<double> train_s = slice(data.seconds, 0, n_train);
  std::vector<double> test_s = slice(data.seconds, n_train, n);
  double fastest = *std::min_element(data.seconds.begin(), data.seconds.end());
  double slowest = *std::max_element(data.seconds.begin(), data.seconds.end());

  auto model = host().create_cost_model("cost.XGBoost", R"({"seed": 1})");
  // Below min_train_samples (16) it scores at random: two calls disagree.
  model->update(slice(train, 0, 10), slice(train_s, 0, 10));
  EXPECT_NE(model->predict(test), model->predict(test));
  model->update(slice(train, 10, n_train), slice(train_s, 10, n_train));
  std::vector<double> predicted = model->predict(test);
  EXPECT_EQ(predicted, model->predict(test)) << "a trained model is deterministic";

  auto random = host().create_cost_model("cost.Random", R"({"seed": 1})");
  random->update(train, train_s);
  const double rho_xgb = spearman(predicted, throughput(test_s));
  const double rho_random = spearman(random->predict(test), throughput(test_s));
  std::printf("%zu candidates, run times %.3g..%.3g ms, measured in %.1f s\n"
              "Spearman on %zu held-out: cost.XGBoost %.3f, cost.Random %.3f\n",
              n, fastest * 1e3, slowest * 1e3, measure_s, test.size(), rho_xgb, rho_random);
  EXPECT_GT(rho_xgb, 0.3);
  EXPECT_GT(rho_xgb, rho_random);

  // Save, load into a fresh instance: the same predictions.
  const std::string path = ::testing::TempDir() + "xgboost_model.json";
  model->save(path);
  auto reloaded = host().create_cost_model("cost.XGBoost", R"({"seed": 99})");
  reloaded->load(path);
  EXPECT_EQ(reloaded->predict(test), predicted);

  // It keeps learning: 90-100 samples >= 70 * 1.2 retrains, on the restored data plus the new,
  // exactly as a model that saw all of it without the round trip.
  reloaded->update(test, test_s);
  auto direct = host().create_cost_model("cost.XGBoost", R"({"seed": 1})");
  direct->update(train, train_s);
  direct->update(test, test_s);
  std::vector<double> after = reloaded->predict(data.candidates);
  EXPECT_EQ(after, direct->predict(data.candidates));
  EXPECT_NE(slice(after, n_train, n), predicted) << "the reloaded model did not retrain";
  std::remove(path.c_str());
}

TEST(XGBoostCostModel, LoadErrorsNameThePath) {
  auto model = host().create_cost_model("cost.XGBoost");
  const std::string garbage = ::testing::TempDir() + "garbage_model.json";
  std::ofstream(garbage) << "this is not a model";
  const std::string other = ::testing::TempDir() + "other_json.json";
  std::ofstream(other) << R"({"format": "something else"})";
  const std::string missing = ::testing::TempDir() + "no_such_dir/model.json";
  for (const std::string& path : {garbage, other, missing}) {
    try {
      model->load(path);
      ADD_FAILURE() << "loaded " << path;
    } catch (const PluginError& e) {
      EXPECT_EQ(e.operation(), "load");
      EXPECT_NE(std::string(e.what()).find("'" + path + "'"), std::string::npos) << e.what();
    }
  }
  try {
    model->save(missing);
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  std::remove(garbage.c_str());
  std::remove(other.c_str());
}

TEST(XGBoostCostModel, BadConfigurationNamesTheKey) {
  for (const char* cfg : {R"({"max_depth": 0})", R"({"eta": "fast"})", R"({"depth": 3})",
                          R"({"tree_method": "gpu_hist"})"}) {
    try {
      host().create_cost_model("cost.XGBoost", cfg);
      ADD_FAILURE() << "accepted " << cfg;
    } catch (const PluginError& e) {
      std::string key = nlohmann::json::parse(cfg).begin().key();
      EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace mt::cost_models_test
#endif
