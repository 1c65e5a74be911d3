// Logging of the tuner and the tools around it (spdlog, to stderr). The level comes from the
// caller (--log-level), else the METATUNE_LOG environment variable, else "info"; plugin log
// messages and host warnings are routed to the same logger. Lines go through
// Terminal::standard_error() (terminal.h), which clears and redraws a progress line around them.
#pragma once

#include <string>

namespace mt {

// Levels: trace, debug, info, warn (or warning), error, critical, off. Throws
// std::invalid_argument naming the level when it is none of these. An empty `level` means
// METATUNE_LOG, then "info".
void configure_logging(const std::string& level = {});

} // namespace mt
