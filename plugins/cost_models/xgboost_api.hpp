// A thin C++ layer over libxgboost's C API (xgboost/c_api.h): owning wrappers of its data
// matrices and boosters, and failures as sdk::Error carrying XGBoost's own message. Only the
// calls cost.XGBoost needs; the vendor header stays inside xgboost_api.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mt::cost_models::xgb {

// A dense float matrix (row-major) in XGBoost's form, optionally with one label per row.
class DMatrix {
public:
  DMatrix(const float* data, size_t rows, size_t cols, int nthread);
  ~DMatrix();
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  void set_labels(const std::vector<float>& labels);
  void* get() const { return h_; }

private:
  void* h_ = nullptr;
};

class Booster {
public:
  // `train`: the matrix it will be trained on (XGBoost learns the number of features from
  // it); none for a booster that is loaded.
  explicit Booster(const DMatrix* train = nullptr);
  ~Booster();
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;

  void set_param(const std::string& name, const std::string& value);
  // One boosting round on `train`.
  void update(int iteration, const DMatrix& train);
  // One prediction per row of `m` (all trees).
  std::vector<float> predict(const DMatrix& m) const;
  // The model as XGBoost's JSON document, and back.
  std::string save_json() const;
  void load_json(const std::string& json);

private:
  void* h_ = nullptr;
};

} // namespace mt::cost_models::xgb
