// Plugin log messages on their way to the host's log (core/plugin/plugin_messages.h): info
// and warning messages are said once per process, debug and error messages every time; a
// message a plugin logs inside a forked measurement worker reaches the parent's log, and many
// workers saying it make one line (here: the oneDNN target's recognition of a matmul, built in
// every worker). The oneDNN part is skipped when the plugin is not built.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/measure/measure.h"
#include "core/plugin/host_api.h"
#include "core/plugin/plugin_messages.h"
#include "core/workload/library.h"
#include "metatune/plugin_api.h"
#include "tune_test_util.h"

namespace mt {
namespace {

using tune_test::host;

// What reaches the host's log sink while the object lives.
class LogSinkCapture {
public:
  LogSinkCapture() {
    set_plugin_log_sink([this](int level, std::string_view message) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.emplace_back(level, std::string(message));
    });
  }
  ~LogSinkCapture() { set_plugin_log_sink(nullptr); }
  size_t count(int level, const std::string& needle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<size_t>(std::count_if(lines_.begin(), lines_.end(), [&](const auto& l) {
      return l.first == level && l.second.find(needle) != std::string::npos;
    }));
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::pair<int, std::string>> lines_;
};

TEST(PluginLog, InfoAndWarningOnceDebugAndErrorEveryTime) {
  LogSinkCapture log;
  for (int i = 0; i < 3; ++i) {
    log_plugin_message(MT_LOG_DEBUG, "test.plugin: debug line");
    log_plugin_message(MT_LOG_INFO, "test.plugin: info line");
    log_plugin_message(MT_LOG_WARNING, "test.plugin: warning line");
    log_plugin_message(MT_LOG_ERROR, "test.plugin: error line");
  }
  // Another text is another message, and so is the same text at another level.
  log_plugin_message(MT_LOG_INFO, "test.plugin: info line 2");
  log_plugin_message(MT_LOG_WARNING, "test.plugin: info line");
  EXPECT_EQ(log.count(MT_LOG_DEBUG, "debug line"), 3u);
  EXPECT_EQ(log.count(MT_LOG_INFO, "test.plugin: info line"), 2u); // "... line" and "... line 2"
  EXPECT_EQ(log.count(MT_LOG_INFO, "info line 2"), 1u);
  EXPECT_EQ(log.count(MT_LOG_WARNING, "warning line"), 1u);
  EXPECT_EQ(log.count(MT_LOG_WARNING, "info line"), 1u);
  EXPECT_EQ(log.count(MT_LOG_ERROR, "error line"), 3u);
}

TEST(PluginLog, RecognitionInManyWorkersIsSaidOnceByTheParent) {
  if (!host().find(ComponentKind::Target, "onednn.cpu"))
    GTEST_SKIP() << "the onednn_cpu plugin is not built here (no oneDNN)";
  LogSinkCapture log;
  auto target = host().create_target("onednn.cpu");
  Function workload = make_workload("matmul(M=48,N=40,K=32)");
  Reference ref = Reference::compute(workload);
  MeasureOptions o;
  o.repeats = 1;
  o.min_repeat_seconds = 0.001;
  o.parallel_builds = 2;
  ASSERT_TRUE(o.isolate);
  const std::string said = "onednn.cpu: matmul -> matmul [48,32] x [32,40]";
  // Four workers at once: what they said reached the parent, once.
  auto measure_four = [&] {
    std::vector<MeasureResult> results =
        Measurer(*target, o).measure(ref, std::vector<Function>(4, workload));
    for (const MeasureResult& r : results)
      EXPECT_EQ(r.status, MeasureStatus::Ok) << r.error;
  };
  measure_four();
  EXPECT_EQ(log.count(MT_LOG_INFO, said), 1u);
  // Four more, forked after the parent said it; then a build in this process.
  measure_four();
  o.isolate = false;
  Measurer(*target, o).measure(ref, {workload});
  EXPECT_EQ(log.count(MT_LOG_INFO, said), 1u);
  EXPECT_EQ(log.count(MT_LOG_INFO, "onednn.cpu: "), 1u);
}

} // namespace
} // namespace mt
