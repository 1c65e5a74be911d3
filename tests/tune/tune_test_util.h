// Shared by the tuner tests: the plugin host of this build tree, a temporary database that
// removes itself, and small, quick tuning options.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/plugin/plugin_host.h"
#include "core/tuner/tuner.h"

namespace mt::tune_test {

inline PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    p->discover({METATUNE_BUILD_PLUGIN_DIR});
    return p;
  }();
  return *h;
}

// A fresh database path, removed (with its WAL files) at the end of the test.
struct TempDb {
  std::string path;
  explicit TempDb(const std::string& suffix = "") {
    path = (std::filesystem::temp_directory_path() /
            ("mt_tuner_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + suffix + ".db"))
               .string();
    remove();
  }
  ~TempDb() { remove(); }
  void remove() const {
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  }
};

// Small and quick: one short repeat per candidate, a small population, no library candidates
// and no side-by-side comparison (tests of those switch them on).
inline TuneOptions quick_options(const std::string& db, size_t trials) {
  TuneOptions o;
  o.db_path = db;
  o.trials = trials;
  o.batch_size = 4;
  o.cost_model = "cost.Random";
  o.measure.repeats = 1;
  o.measure.min_repeat_seconds = 0.001;
  o.measure.warmup_runs = 1;
  o.evolutionary.population = 32;
  o.evolutionary.init_min_unmeasured = 8;
  o.evolutionary.genetic_iterations = 1;
  o.library_targets.clear();
  o.compare = false;
  o.verify.top = 0; // the tests that want the re-measurement turn it on
  return o;
}

} // namespace mt::tune_test
