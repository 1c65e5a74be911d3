// Shared by the onednn tests: the plugin loaded once through the host, "is it offered?"
// through the onednn.Supported postprocessor, and running a function both through the
// oneDNN module and through the reference interpreter on the same random inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../function_args.h"
#include "core/ir/function.h"
#include "core/lower/interpreter.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"

namespace mt::onednn_test {

inline PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    const PluginRecord& r = p->load(MT_ONEDNN_CPU_PLUGIN);
    if (!r.loaded()) throw std::runtime_error("onednn_cpu plugin refused: " + r.message);
    return p;
  }();
  return *h;
}

inline PluginTarget& target() {
  static std::unique_ptr<PluginTarget> t = host().create_target("onednn.cpu", R"({"log": false})");
  return *t;
}

// Whether onednn.cpu offers `f` (the cheap question: no primitive is created).
inline bool offered(const Function& f, std::string* why = nullptr) {
  static std::unique_ptr<PluginPostproc> pp = host().create_postproc("onednn.Supported");
  return pp->apply(std::make_shared<Schedule>(f), why);
}

// Inputs random in [-1, 1) (deterministic), outputs NaN so that an unwritten element shows.
inline std::vector<NDArray> make_args(const Function& f, uint64_t seed = 11) {
  return test_args::make_args(f, seed);
}
using test_args::ptrs;

inline size_t output_index(const Function& f) {
  std::vector<bool> outs = f.output_mask();
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) return i;
  throw std::logic_error("function without output");
}

// Builds `f` with onednn.cpu and checks its outputs (every one) against the interpreter's.
inline void expect_matches_reference(const Function& f, double rtol = 1e-4, double atol = 1e-4) {
  std::vector<NDArray> ref = make_args(f), got = make_args(f);
  interpret(f, ptrs(ref));
  std::unique_ptr<PluginModule> m = target().build(f);
  m->run(ptrs(got));
  std::vector<bool> outs = f.output_mask();
  std::string why;
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!outs[o]) continue;
    EXPECT_TRUE(allclose(got[o], ref[o], rtol, atol, &why))
        << f.name << " output " << f.params[o]->name << ": " << why;
  }
  // A second run on the same tensors gives the same result (no state kept between calls).
  size_t o = output_index(f);
  NDArray first = got[o];
  m->run(ptrs(got));
  EXPECT_TRUE(allclose(got[o], first, 0, 0, &why)) << "second run differs: " << why;
  // Other inputs through the same module (nothing derived from the first call's tensors).
  std::vector<NDArray> ref2 = make_args(f, 23), got2 = make_args(f, 23);
  interpret(f, ptrs(ref2));
  m->run(ptrs(got2));
  EXPECT_TRUE(allclose(got2[o], ref2[o], rtol, atol, &why)) << "other inputs: " << why;
}

} // namespace mt::onednn_test
