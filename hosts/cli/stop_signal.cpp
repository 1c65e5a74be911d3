// Stop handlers of the long-running commands (see stop_signal.h).
#include "hosts/cli/stop_signal.h"

#include <csignal>
#include <ctime>

#include <unistd.h>

namespace mt::cli {

namespace {

std::atomic<bool> g_stop{false};
// When the first signal came, in CLOCK_MONOTONIC nanoseconds (clock_gettime is
// async-signal-safe; a lock-free atomic is the only state a handler may share).
std::atomic<long long> g_first_signal_ns{0};
constexpr long long kRepeatNs = 250'000'000;
static_assert(std::atomic<long long>::is_always_lock_free);

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

extern "C" void on_stop_signal(int) {
  const long long now = monotonic_ns();
  long long first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    g_stop.store(true);
    return;
  }
  // A second Ctrl-C means "now": leave without waiting for the trial in flight.
  if (now - first >= kRepeatNs) _exit(130);
}

} // namespace

const std::atomic<bool>* install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return &g_stop;
}

} // namespace mt::cli
