// The flags `model generate` and `model chat` share: how the next token is chosen
// (--temperature, --top-k, --sampling-seed), the decode steps' cache capacities, and which
// kernels run (--db, --implementations, --target, --library, --fpmath).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/graph/token_sampler.h"

namespace mt::cli {

void add_sampling_flags(CLI::App* cmd, double& temperature, int64_t& top_k, uint64_t& seed);
// Greedy unless temperature > 0.
SamplingOptions sampling_of(double temperature, int64_t top_k, uint64_t seed);

// --capacities: the key/value cache capacities compiled for decode steps.
void add_capacities_flag(CLI::App* cmd, std::vector<int64_t>& capacities);

void add_kernel_flags(CLI::App* cmd, std::string& db, std::string& implementations,
                      std::string& target, std::vector<std::string>& libraries,
                      std::string& fpmath);

} // namespace mt::cli
