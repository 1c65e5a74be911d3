// Timing a device call with events, for targets whose calls are queued to a device (CUDA,
// HIP, cuBLAS): each repeat issues its calls back to back between two events and waits once.
// Waiting after every call instead adds the host's round trip -- the wait, then the next
// launch -- to each call's time: a few microseconds, which is several percent of a 0.2 ms
// matmul and more of a 50 us one, and more for the shorter of two kernels compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mt::sdk {

// The most calls one repeat issues: a call of a microsecond or less is timed over this many.
inline constexpr int64_t kMaxCallsPerRepeat = 100000;

// Seconds per call for each of `repeats` repeats. `timed(n)` issues n calls between two
// events and returns the seconds between them (after waiting for the second); `flush()` evicts
// the device's caches and runs before each repeat, outside the events. One timed call first
// sizes the repeats: as many calls as last min_repeat_seconds by its time (at least one, at
// most kMaxCallsPerRepeat). The caller has run the call once before (loading, warm-up).
template <class Timed, class Flush>
std::vector<double> time_back_to_back(Timed&& timed, Flush&& flush, int repeats,
                                      double min_repeat_seconds) {
  std::vector<double> out;
  if (repeats <= 0) return out;
  const double one = timed(int64_t{1});
  int64_t calls = 1;
  if (one > 0 && min_repeat_seconds > one)
    calls = std::min<int64_t>(kMaxCallsPerRepeat,
                              static_cast<int64_t>(std::ceil(min_repeat_seconds / one)));
  else if (one <= 0 && min_repeat_seconds > 0)
    calls = kMaxCallsPerRepeat; // below the events' resolution
  for (int r = 0; r < repeats; ++r) {
    flush();
    out.push_back(timed(calls) / static_cast<double>(calls));
  }
  return out;
}

// The same over a device's events: `launch()` issues one call; `start` and `end` are events
// with record() and a static elapsed_ms(start, end) that waits for `end` (CUDA's and HIP's).
template <class Event, class Launch, class Flush>
std::vector<double> time_between_events(Event& start, Event& end, Launch&& launch, Flush&& flush,
                                        int repeats, double min_repeat_seconds) {
  return time_back_to_back(
      [&](int64_t calls) {
        start.record();
        for (int64_t c = 0; c < calls; ++c)
          launch();
        end.record();
        return Event::elapsed_ms(start, end) / 1e3;
      },
      flush, repeats, min_repeat_seconds);
}

} // namespace mt::sdk
