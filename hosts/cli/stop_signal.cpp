// Stop handlers of the long-running commands (see stop_signal.h).
#include "hosts/cli/stop_signal.h"

#include <csignal>

#include <unistd.h>

namespace mt::cli {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  // A second Ctrl-C means "now": leave without waiting for the trial in flight.
  if (g_stop.exchange(true)) _exit(130);
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
