// Per-store features of a scheduled tensor program: for every buffer store of the lowered
// loop program, a fixed-length vector of numbers describing its arithmetic, the loops around
// it (vectorize / unroll / parallel / GPU binding), the buffers it touches (bytes, footprint,
// cache lines, reuse, stride), its arithmetic-intensity curve and its allocation. Cost models
// learn run time from these rows. Every feature and its index: docs/features.md.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/function.h"

namespace mt {

// Layout of one row: groups in this order, each of the given size.
inline constexpr int kArithFeatures = 26;  // weighted operation counts
inline constexpr int kLoopFeatures = 41;   // vectorize/unroll/parallel + GPU binding
inline constexpr int kBuffersPerStore = 5; // accessed buffers described, by bytes
inline constexpr int kFeaturesPerBuffer = 18;
inline constexpr int kIntensityPoints = 10; // arithmetic-intensity curve samples
inline constexpr int kAllocFeatures = 4;
inline constexpr int kOuterFeatures = 3; // trip count, loop count, auto-unroll
inline constexpr int kFeaturesPerStore = kArithFeatures + kLoopFeatures +
                                         kBuffersPerStore * kFeaturesPerBuffer + kIntensityPoints +
                                         kAllocFeatures + kOuterFeatures;

// Offsets of the groups in a row.
inline constexpr int kArithOffset = 0;
inline constexpr int kLoopOffset = kArithOffset + kArithFeatures;
inline constexpr int kBufferOffset = kLoopOffset + kLoopFeatures;
inline constexpr int kIntensityOffset = kBufferOffset + kBuffersPerStore * kFeaturesPerBuffer;
inline constexpr int kAllocOffset = kIntensityOffset + kIntensityPoints;
inline constexpr int kOuterOffset = kAllocOffset + kAllocFeatures;
static_assert(kOuterOffset + kOuterFeatures == kFeaturesPerStore);

struct FeatureOptions {
  // Counts, sizes and extents as log2(1 + x) (the form cost models see). false gives the raw
  // values, for tests and debugging. One-hot flags and intensities are never scaled.
  bool log_scale = true;
};

// Name of every feature, index = position in a row ("op.float_mul", "vec.len",
// "buf0.unique_bytes", ...).
const std::vector<std::string>& feature_names();
// Index of a named feature; throws std::out_of_range for an unknown name.
int feature_index(std::string_view name);
// True for features that log_scale transforms.
bool feature_is_log_scaled(int index);

// One row of kFeaturesPerStore values per Store statement of the lowered program, in program
// order. `scheduled` is lowered first unless it already is (block-level unroll annotations
// are only seen on a function that is not lowered yet).
std::vector<std::vector<float>> extract_features(const Function& scheduled,
                                                 const FeatureOptions& options = {});

// Rows of features as one dense row-major float matrix, the form handed to cost models.
struct FeatureMatrix {
  size_t rows = 0;
  size_t cols = kFeaturesPerStore;
  std::vector<float> data; // rows * cols

  float at(size_t r, size_t c) const { return data[r * cols + c]; }
  const float* row(size_t r) const { return data.data() + r * cols; }
};

FeatureMatrix to_feature_matrix(const std::vector<std::vector<float>>& rows);
FeatureMatrix extract_feature_matrix(const Function& scheduled, const FeatureOptions& options = {});

} // namespace mt
