#include "xgboost_api.hpp"

#include <cmath>

#include <xgboost/c_api.h>

#include "metatune/sdk/error.hpp"

namespace mt::cost_models::xgb {

namespace {

void check(int rc, const char* call) {
  if (rc == 0) return;
  const char* why = XGBGetLastError();
  throw sdk::Error(MT_ERROR_UNKNOWN, std::string("XGBoost ") + call +
                                         " failed: " + (why && *why ? why : "no message"));
}

} // namespace

DMatrix::DMatrix(const float* data, size_t rows, size_t cols, int nthread) {
  check(XGDMatrixCreateFromMat_omp(data, static_cast<bst_ulong>(rows), static_cast<bst_ulong>(cols),
                                   std::nanf(""), &h_, nthread),
        "XGDMatrixCreateFromMat_omp");
}

DMatrix::~DMatrix() {
  if (h_) XGDMatrixFree(h_);
}

void DMatrix::set_labels(const std::vector<float>& labels) {
  check(XGDMatrixSetFloatInfo(h_, "label", labels.data(), static_cast<bst_ulong>(labels.size())),
        "XGDMatrixSetFloatInfo(label)");
}

Booster::Booster(const DMatrix* train) {
  void* cache[1] = {train ? train->get() : nullptr};
  check(XGBoosterCreate(cache, train ? 1 : 0, &h_), "XGBoosterCreate");
}

Booster::~Booster() {
  if (h_) XGBoosterFree(h_);
}

void Booster::set_param(const std::string& name, const std::string& value) {
  check(XGBoosterSetParam(h_, name.c_str(), value.c_str()),
        ("XGBoosterSetParam(" + name + "=" + value + ")").c_str());
}

void Booster::update(int iteration, const DMatrix& train) {
  check(XGBoosterUpdateOneIter(h_, iteration, train.get()), "XGBoosterUpdateOneIter");
}

std::vector<float> Booster::predict(const DMatrix& m) const {
  bst_ulong n = 0;
  const float* out = nullptr;
  check(
      XGBoosterPredict(h_, m.get(), /*option_mask=*/0, /*ntree_limit=*/0, /*training=*/0, &n, &out),
      "XGBoosterPredict");
  return std::vector<float>(out, out + n);
}

std::string Booster::save_json() const {
  bst_ulong n = 0;
  const char* out = nullptr;
  check(XGBoosterSaveModelToBuffer(h_, R"({"format": "json"})", &n, &out),
        "XGBoosterSaveModelToBuffer");
  return std::string(out, n);
}

void Booster::load_json(const std::string& json) {
  check(XGBoosterLoadModelFromBuffer(h_, json.data(), static_cast<bst_ulong>(json.size())),
        "XGBoosterLoadModelFromBuffer");
}

} // namespace mt::cost_models::xgb
