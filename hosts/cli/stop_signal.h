// Ctrl-C / SIGTERM for the long-running commands (tune, model tune): the first signal sets a
// flag the tuner checks between trials, so everything measured is kept and the run ends
// cleanly (exit status 130); a second one, a quarter of a second or more later, leaves at once.
// Sooner it is the same request delivered twice: coreutils' `timeout` sends its signal to the
// command and then to the command's process group, which holds the command too, and a script
// that caps a run with it must still get the run's report.
#pragma once

#include <atomic>

namespace mt::cli {

// Installs the handlers and returns the flag they set.
const std::atomic<bool>* install_stop_handlers();

} // namespace mt::cli
