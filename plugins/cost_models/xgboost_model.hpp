// cost.XGBoost: gradient-boosted trees (libxgboost) learning, online, how fast a candidate is
// from its features -- MetaSchedule's default cost model. Until it has trained on
// min_train_samples measured candidates it scores uniformly at random; after that it predicts
// each candidate's normalised throughput (best time of its workload / its time, in (0, 1]),
// and retrains from scratch whenever its data has grown by retrain_growth since the last
// training. save/load keep the booster and the measured data, so a reloaded model keeps
// learning. Configuration keys and the file format: README.md.
//
// Fork safety: the tuner forks measurement workers. Training and prediction run only in the
// caller's thread (the tuner's), synchronously, with XGBoost's own threads limited to
// `nthread` (default 1: no worker threads at all), so no XGBoost lock is held while another
// thread forks, and the children never call XGBoost.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "metatune/sdk/components.hpp"

namespace mt::cost_models {

namespace xgb {
class Booster;
}

struct XGBoostOptions {
  int64_t max_depth = 10;
  double eta = 0.2;
  double gamma = 0.001;          // minimum loss reduction to split
  double min_child_weight = 0.0; // few samples: let leaves be small
  double subsample = 1.0;
  int64_t num_rounds = 100;       // boosting rounds per training
  int64_t min_train_samples = 16; // one small batch: a tuner's first batch already steers
  double retrain_growth = 0.2;    // retrain when data grew by this fraction since last time
  int64_t nthread = 1;
  int64_t seed = 1; // XGBoost's seed and the random scores' before training
  std::string tree_method = "exact";
};

class XGBoostModel : public sdk::CostModel {
public:
  explicit XGBoostModel(std::string_view config);
  ~XGBoostModel() override;

  std::vector<double> predict(const std::vector<sdk::Schedule>& candidates) override;
  void update(const std::vector<sdk::Schedule>& candidates,
              const std::vector<double>& run_seconds) override;
  void save(const std::string& path) override;
  void load(const std::string& path) override;

private:
  struct Sample {
    size_t group = 0;   // index into groups_
    double seconds = 0; // measured; not finite or <= 0 = failed (label 0)
  };
  std::vector<float> rows_of(const std::vector<sdk::Schedule>& candidates, size_t* cols);
  size_t group_of(const std::string& key);
  void train();

  XGBoostOptions opt_;
  std::mt19937_64 rng_;
  size_t row_length_ = 0; // 0 until the first candidate is seen
  std::vector<float> x_;  // samples x row_length_, row-major
  std::vector<Sample> samples_;
  std::vector<std::string> groups_;
  size_t trained_on_ = 0; // samples in the last training (0 = never trained)
  std::unique_ptr<xgb::Booster> booster_;
};

} // namespace mt::cost_models
