// Ctrl-C / SIGTERM for the long-running commands (tune, model tune): the first signal sets a
// flag the tuner checks between trials, so everything measured is kept and the run ends
// cleanly (exit status 130); a second one leaves at once.
#pragma once

#include <atomic>

namespace mt::cli {

// Installs the handlers and returns the flag they set.
const std::atomic<bool>* install_stop_handlers();

} // namespace mt::cli
