// sdk/device_timing.hpp: how a device target's time() sizes and times its repeats. The device
// here is a log of what was asked of it with a clock of its own: each call takes a fixed time,
// so the per-call figures and the number of calls a repeat issues are exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "metatune/sdk/device_timing.hpp"

namespace mt {
namespace {

struct LoggedDevice {
  double seconds_per_call;
  std::vector<std::string> log; // "flush", or "timed N"

  std::vector<double> time(int repeats, double min_repeat_seconds) {
    return sdk::time_back_to_back(
        [&](int64_t calls) {
          log.push_back("timed " + std::to_string(calls));
          return seconds_per_call * static_cast<double>(calls);
        },
        [&] { log.push_back("flush"); }, repeats, min_repeat_seconds);
  }
};

TEST(SdkDeviceTiming, OneCallSizesTheRepeatsThenEachIsFlushedAndTimedBackToBack) {
  LoggedDevice d{1e-3, {}};
  std::vector<double> t = d.time(3, 0.1);
  ASSERT_EQ(t.size(), 3u);
  for (double s : t)
    EXPECT_DOUBLE_EQ(s, 1e-3);
  EXPECT_EQ(d.log, (std::vector<std::string>{"timed 1", "flush", "timed 100", "flush", "timed 100",
                                             "flush", "timed 100"}));
}

TEST(SdkDeviceTiming, ACallLongerThanTheRepeatIsTimedAlone) {
  LoggedDevice d{0.5, {}};
  std::vector<double> t = d.time(2, 0.1);
  EXPECT_EQ(t, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(d.log, (std::vector<std::string>{"timed 1", "flush", "timed 1", "flush", "timed 1"}));
}

TEST(SdkDeviceTiming, ACallBelowTheEventsResolutionGetsTheMostCalls) {
  LoggedDevice d{0, {}};
  std::vector<double> t = d.time(1, 0.1);
  EXPECT_EQ(t, (std::vector<double>{0}));
  EXPECT_EQ(d.log.back(), "timed " + std::to_string(sdk::kMaxCallsPerRepeat));
}

TEST(SdkDeviceTiming, AShortCallIsCappedAndNoRepeatsMeansNoCalls) {
  LoggedDevice tiny{1e-9, {}};
  tiny.time(1, 0.1);
  EXPECT_EQ(tiny.log.back(), "timed " + std::to_string(sdk::kMaxCallsPerRepeat));
  LoggedDevice none{1e-3, {}};
  EXPECT_TRUE(none.time(0, 0.1).empty());
  EXPECT_TRUE(none.log.empty());
  LoggedDevice once{1e-3, {}};
  once.time(1, 0);
  EXPECT_EQ(once.log, (std::vector<std::string>{"timed 1", "flush", "timed 1"}));
}

// Over events: the calls between the two records, the flush outside them.
struct ClockEvent {
  const double* clock;
  double at = 0;
  void record() { at = *clock; }
  static float elapsed_ms(const ClockEvent& a, const ClockEvent& b) {
    return static_cast<float>((b.at - a.at) * 1e3);
  }
};

TEST(SdkDeviceTiming, EventsBracketTheCallsAndNotTheFlush) {
  double clock = 0;
  int launches = 0, flushes = 0;
  ClockEvent start{&clock}, end{&clock};
  std::vector<double> t = sdk::time_between_events(
      start, end,
      [&] {
        clock += 2e-3;
        ++launches;
      },
      [&] {
        clock += 1.0; // a flush that took a second must not count
        ++flushes;
      },
      2, 0.1);
  ASSERT_EQ(t.size(), 2u);
  for (double s : t)
    EXPECT_NEAR(s, 2e-3, 1e-6);
  EXPECT_EQ(launches, 1 + 2 * 50);
  EXPECT_EQ(flushes, 2);
}

} // namespace
} // namespace mt
