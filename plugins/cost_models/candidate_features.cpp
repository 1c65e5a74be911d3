#include "candidate_features.hpp"

#include <algorithm>
#include <cmath>

namespace mt::cost_models {

size_t candidate_row_length(size_t store_cols) {
  return 2 * store_cols + 1;
}

void append_candidate_row(const sdk::FeatureMatrixView& stores, std::vector<float>& out) {
  const size_t cols = stores.cols;
  const size_t base = out.size();
  out.resize(base + candidate_row_length(cols), 0.0f);
  float* sum = out.data() + base;
  float* max = sum + cols;
  for (size_t r = 0; r < stores.rows; ++r) {
    const float* row = stores.row(r);
    for (size_t c = 0; c < cols; ++c) {
      sum[c] += row[c];
      max[c] = r == 0 ? row[c] : std::max(max[c], row[c]);
    }
  }
  out[base + 2 * cols] = static_cast<float>(std::log2(1.0 + static_cast<double>(stores.rows)));
}

std::string workload_key(const sdk::Schedule& candidate) {
  sdk::Program p = candidate.program();
  std::string key = p.name() + "(";
  bool first = true;
  for (const sdk::BufferRef& b : p.params()) {
    if (!first) key += ",";
    first = false;
    sdk::DType t = b.dtype();
    key += "t" + std::to_string(static_cast<int>(t.kind)) + "b" + std::to_string(t.bits) + "[";
    std::vector<int64_t> shape = b.shape();
    for (size_t i = 0; i < shape.size(); ++i)
      key += (i ? "," : "") + std::to_string(shape[i]);
    key += "]";
  }
  return key + ")";
}

} // namespace mt::cost_models
