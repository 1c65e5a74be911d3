// What the learnt models see of a candidate: one fixed-length row made from its per-store
// feature matrix (which has one row per buffer store, a number that varies between candidates),
// and the group its run time is compared within (its workload). See README.md for why the
// rows are aggregated rather than predicted per store.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "metatune/sdk/schedule.hpp"

namespace mt::cost_models {

// Length of a candidate row for `store_cols` features per store: the sum over stores of every
// feature, then the maximum over stores of every feature, then log2(1 + number of stores).
size_t candidate_row_length(size_t store_cols);

// Appends the candidate row of `stores` to `out`.
void append_candidate_row(const sdk::FeatureMatrixView& stores, std::vector<float>& out);

// The workload of a candidate: its function's name and the dtypes and shapes of its params
// ("matmul(t2b32[128,128],...)": dtype kind and bits, then the shape). Candidates of one
// workload share it.
std::string workload_key(const sdk::Schedule& candidate);

} // namespace mt::cost_models
