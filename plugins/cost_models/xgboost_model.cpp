#include "xgboost_model.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "candidate_features.hpp"
#include "config.hpp"
#include "xgboost_api.hpp"

namespace mt::cost_models {

namespace {

constexpr const char* kName = "cost.XGBoost";
constexpr const char* kFileFormat = "metatune.cost.XGBoost";
constexpr int kFileVersion = 1;

std::string number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

bool valid_time(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

[[noreturn]] void file_error(const char* op, const std::string& path, const std::string& why) {
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                   std::string(kName) + ": cannot " + op + " '" + path + "': " + why);
}

} // namespace

XGBoostModel::XGBoostModel(std::string_view config) {
  Config c(kName, config,
           {"max_depth", "eta", "gamma", "min_child_weight", "subsample", "num_rounds",
            "min_train_samples", "retrain_growth", "nthread", "seed", "tree_method"});
  const int64_t big = std::numeric_limits<int32_t>::max();
  opt_.max_depth = c.get_int("max_depth", opt_.max_depth, 1, 64);
  opt_.eta = c.get_double("eta", opt_.eta, 1e-6, 1.0);
  opt_.gamma = c.get_double("gamma", opt_.gamma, 0.0, 1e9);
  opt_.min_child_weight = c.get_double("min_child_weight", opt_.min_child_weight, 0.0, 1e9);
  opt_.subsample = c.get_double("subsample", opt_.subsample, 1e-6, 1.0);
  opt_.num_rounds = c.get_int("num_rounds", opt_.num_rounds, 1, big);
  opt_.min_train_samples = c.get_int("min_train_samples", opt_.min_train_samples, 1, big);
  opt_.retrain_growth = c.get_double("retrain_growth", opt_.retrain_growth, 0.0, 1e9);
  opt_.nthread = c.get_int("nthread", opt_.nthread, 1, 1024);
  opt_.seed = c.get_int("seed", opt_.seed, 0, big);
  opt_.tree_method = c.get_string("tree_method", opt_.tree_method);
  // XGBoost would only complain at the first training, a hundred measurements later.
  if (opt_.tree_method != "exact" && opt_.tree_method != "approx" && opt_.tree_method != "hist" &&
      opt_.tree_method != "auto")
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string(kName) + ": 'tree_method' = \"" +
                                                    opt_.tree_method +
                                                    "\" is not one of exact, approx, hist, auto");
  rng_.seed(static_cast<uint64_t>(opt_.seed));
}

XGBoostModel::~XGBoostModel() = default;

std::vector<float> XGBoostModel::rows_of(const std::vector<sdk::Schedule>& candidates,
                                         size_t* cols) {
  std::vector<float> rows;
  size_t length = row_length_;
  for (const sdk::Schedule& s : candidates) {
    sdk::FeatureMatrixView m = s.features();
    size_t l = candidate_row_length(m.cols);
    if (length == 0) length = l;
    if (l != length)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       std::string(kName) + ": candidates have " + std::to_string(m.cols) +
                           " features per store, the model was built for rows of " +
                           std::to_string(length) + " (another feature version?)");
    append_candidate_row(m, rows);
  }
  *cols = length;
  return rows;
}

std::vector<double> XGBoostModel::predict(const std::vector<sdk::Schedule>& candidates) {
  std::vector<double> scores;
  if (!booster_) {
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (size_t i = 0; i < candidates.size(); ++i)
      scores.push_back(uniform(rng_));
    return scores;
  }
  if (candidates.empty()) return scores;
  size_t cols = 0;
  std::vector<float> rows = rows_of(candidates, &cols);
  xgb::DMatrix m(rows.data(), candidates.size(), cols, static_cast<int>(opt_.nthread));
  for (float p : booster_->predict(m))
    scores.push_back(p);
  return scores;
}

size_t XGBoostModel::group_of(const std::string& key) {
  auto it = std::find(groups_.begin(), groups_.end(), key);
  if (it != groups_.end()) return static_cast<size_t>(it - groups_.begin());
  groups_.push_back(key);
  return groups_.size() - 1;
}

void XGBoostModel::update(const std::vector<sdk::Schedule>& candidates,
                          const std::vector<double>& run_seconds) {
  if (candidates.empty()) return;
  if (run_seconds.size() != candidates.size())
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     std::string(kName) + ": one run time per candidate");
  // Everything that can fail first, so that a failure adds nothing.
  size_t cols = 0;
  std::vector<float> rows = rows_of(candidates, &cols);
  std::vector<std::string> keys;
  for (const sdk::Schedule& c : candidates)
    keys.push_back(workload_key(c));
  row_length_ = cols;
  x_.insert(x_.end(), rows.begin(), rows.end());
  for (size_t i = 0; i < candidates.size(); ++i)
    samples_.push_back({group_of(keys[i]), run_seconds[i]});

  const size_t n = samples_.size();
  if (n < static_cast<size_t>(opt_.min_train_samples)) return;
  if (trained_on_ > 0 &&
      static_cast<double>(n) < static_cast<double>(trained_on_) * (1.0 + opt_.retrain_growth))
    return;
  train();
}

void XGBoostModel::train() {
  const size_t n = samples_.size();
  std::vector<double> best(groups_.size(), std::numeric_limits<double>::infinity());
  for (const Sample& s : samples_)
    if (valid_time(s.seconds)) best[s.group] = std::min(best[s.group], s.seconds);
  std::vector<float> labels;
  labels.reserve(n);
  for (const Sample& s : samples_)
    labels.push_back(valid_time(s.seconds) ? static_cast<float>(best[s.group] / s.seconds) : 0.0f);

  xgb::DMatrix train_set(x_.data(), n, row_length_, static_cast<int>(opt_.nthread));
  train_set.set_labels(labels);
  auto booster = std::make_unique<xgb::Booster>(&train_set);
  booster->set_param("objective", "reg:squarederror");
  booster->set_param("max_depth", std::to_string(opt_.max_depth));
  booster->set_param("eta", number(opt_.eta));
  booster->set_param("gamma", number(opt_.gamma));
  booster->set_param("min_child_weight", number(opt_.min_child_weight));
  booster->set_param("subsample", number(opt_.subsample));
  booster->set_param("nthread", std::to_string(opt_.nthread));
  booster->set_param("seed", std::to_string(opt_.seed));
  booster->set_param("tree_method", opt_.tree_method);
  booster->set_param("verbosity", "0");
  for (int64_t i = 0; i < opt_.num_rounds; ++i)
    booster->update(static_cast<int>(i), train_set);
  booster_ = std::move(booster);
  trained_on_ = n;
}

void XGBoostModel::save(const std::string& path) {
  nlohmann::json j;
  j["format"] = kFileFormat;
  j["version"] = kFileVersion;
  j["row_length"] = row_length_;
  j["trained_on"] = trained_on_;
  j["groups"] = groups_;
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : samples_)
    samples.push_back({s.group, valid_time(s.seconds) ? nlohmann::json(s.seconds) : nullptr});
  j["samples"] = std::move(samples);
  j["features"] = x_;
  j["booster"] = booster_ ? nlohmann::json::parse(booster_->save_json()) : nlohmann::json();

  // Written next to the target and renamed over it: a crash never leaves half a model.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) file_error("save to", path, std::strerror(errno));
    out << j.dump();
    out.close();
    if (!out) file_error("save to", path, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    file_error("save to", path, why);
  }
}

void XGBoostModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) file_error("load", path, std::strerror(errno));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    file_error("load", path, std::string("not a saved model (not JSON: ") + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", "") != kFileFormat)
    file_error("load", path,
               std::string("not a saved ") + kName + " model (no \"format\": \"" + kFileFormat +
                   "\")");
  if (j.value("version", 0) != kFileVersion)
    file_error("load", path, "unsupported version " + j.value("version", nlohmann::json()).dump());

  // Read everything first, then replace the model's state: a bad file changes nothing.
  size_t row_length = 0, trained_on = 0;
  std::vector<std::string> groups;
  std::vector<Sample> samples;
  std::vector<float> x;
  std::unique_ptr<xgb::Booster> booster;
  try {
    row_length = j.at("row_length").get<size_t>();
    trained_on = j.at("trained_on").get<size_t>();
    groups = j.at("groups").get<std::vector<std::string>>();
    for (const auto& s : j.at("samples")) {
      Sample sample;
      sample.group = s.at(0).get<size_t>();
      sample.seconds =
          s.at(1).is_null() ? std::numeric_limits<double>::infinity() : s.at(1).get<double>();
      samples.push_back(sample);
    }
    x = j.at("features").get<std::vector<float>>();
  } catch (const nlohmann::json::exception& e) {
    file_error("load", path, std::string("malformed model file: ") + e.what());
  }
  for (const Sample& s : samples)
    if (s.group >= groups.size()) file_error("load", path, "a sample names an unknown group");
  if (j.contains("booster") && !j["booster"].is_null()) {
    try {
      booster = std::make_unique<xgb::Booster>();
      booster->load_json(j["booster"].dump());
      booster->set_param("nthread", std::to_string(opt_.nthread));
    } catch (const sdk::Error& e) {
      file_error("load", path, e.what());
    }
  }
  if (x.size() != samples.size() * row_length || trained_on > samples.size())
    file_error("load", path,
               "inconsistent sizes (features for " + std::to_string(x.size()) + " values, " +
                   std::to_string(samples.size()) + " samples of " + std::to_string(row_length) +
                   ")");
  if (row_length_ != 0 && row_length != 0 && row_length != row_length_)
    file_error("load", path,
               "rows of " + std::to_string(row_length) + " features, this model uses " +
                   std::to_string(row_length_));
  if (row_length != 0) row_length_ = row_length;
  trained_on_ = trained_on;
  groups_ = std::move(groups);
  samples_ = std::move(samples);
  x_ = std::move(x);
  booster_ = std::move(booster);
}

} // namespace mt::cost_models
