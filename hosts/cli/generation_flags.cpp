// The shared generation flags (see generation_flags.h).
#include "hosts/cli/generation_flags.h"

#include "hosts/cli/model_execution.h"

namespace mt::cli {

void add_sampling_flags(CLI::App* cmd, double& temperature, int64_t& top_k, uint64_t& seed) {
  cmd->add_option("--temperature", temperature, "Sample from softmax(logits / T) (T > 0)");
  cmd->add_option("--top-k", top_k, "Sample among the k most likely tokens only");
  cmd->add_option("--sampling-seed", seed, "Seed of the sampling")->capture_default_str();
}

SamplingOptions sampling_of(double temperature, int64_t top_k, uint64_t seed) {
  SamplingOptions s;
  s.greedy = !(temperature > 0);
  s.temperature = temperature > 0 ? temperature : 1.0;
  s.top_k = top_k;
  s.seed = seed;
  return s;
}

void add_capacities_flag(CLI::App* cmd, std::vector<int64_t>& capacities) {
  cmd->add_option("--capacities", capacities,
                  "Cache capacities compiled for decode steps (one decode graph each)")
      ->delimiter(',')
      ->capture_default_str();
}

void add_kernel_flags(CLI::App* cmd, std::string& db, std::string& implementations,
                      std::string& target, std::vector<std::string>& libraries,
                      std::string& fpmath) {
  cmd->add_option("--db", db, "Tuning database with the model's tuned records");
  cmd->add_option("--implementations", implementations,
                  "untuned, tuned, library or best (default: best with --db, else library: oneDNN "
                  "where it implements a task, the rest untuned)");
  cmd->add_option("--target", target, "The tuning target")->capture_default_str();
  cmd->add_option("--library", libraries, "Library targets (repeatable)")->capture_default_str();
  add_fpmath_option(cmd, fpmath);
}

} // namespace mt::cli
