// Helpers shared by the ABI tests: where the test plugins were built, running a function in
// the reference interpreter, running a command for its output, and a log sink that captures
// what the host reports.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "../function_args.h"
#include "core/ir/function.h"
#include "core/lower/interpreter.h"
#include "core/plugin/host_api.h"
#include "core/runtime/ndarray.h"

namespace mt::abi_test {

// Runs a shell command: (exit status, what it wrote to stdout).
inline std::pair<int, std::string> capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline std::filesystem::path plugin_dir(const char* which) {
  return std::filesystem::path(MT_TEST_PLUGIN_DIR) / which;
}
inline std::filesystem::path good_dir() {
  return plugin_dir("good");
}
inline std::filesystem::path refused_dir() {
  return plugin_dir("refused");
}
inline std::filesystem::path stripped_dir() {
  return plugin_dir("stripped");
}

// Arguments for `f` (../function_args.h): inputs random (deterministic per seed), outputs NaN
// so that an element no statement writes shows up.
inline std::vector<NDArray> make_args(const Function& f, uint64_t seed = 11) {
  return test_args::make_args(f, seed);
}

inline std::vector<NDArray*> pointers(std::vector<NDArray>& args) {
  return test_args::ptrs(args);
}

inline std::vector<NDArray> interpret_on_random(const Function& f, uint64_t seed = 11) {
  std::vector<NDArray> args = make_args(f, seed);
  interpret(f, pointers(args));
  return args;
}

inline void expect_same_results(const Function& reference, const Function& scheduled) {
  std::vector<NDArray> a = interpret_on_random(reference);
  std::vector<NDArray> b = interpret_on_random(scheduled);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::string why;
    EXPECT_TRUE(allclose(b[i], a[i], 1e-4, 1e-5, &why)) << "param " << i << ": " << why;
  }
}

// Captures the host's log (refusals are warnings) for the lifetime of the object.
class CapturedLog {
public:
  CapturedLog() {
    set_plugin_log_sink([this](int level, std::string_view msg) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back({level, std::string(msg)});
    });
  }
  ~CapturedLog() { set_plugin_log_sink(nullptr); }
  std::vector<std::string> at_least(int level) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [l, m] : lines_)
      if (l >= level) out.push_back(m);
    return out;
  }

private:
  mutable std::mutex mu_;
  std::vector<std::pair<int, std::string>> lines_;
};

} // namespace mt::abi_test
