// Logging set-up (see tune_log.h).
#include "core/tuner/tune_log.h"

#include <cstdlib>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "core/plugin/host_api.h"
#include "core/tuner/terminal.h"
#include "core/tuner/terminal_log_sink.h"
#include "metatune/plugin_api.h"

namespace mt {

void configure_logging(const std::string& level) {
  std::string name = level;
  if (name.empty())
    if (const char* env = std::getenv("METATUNE_LOG")) name = env;
  if (name.empty()) name = "info";
  if (name == "warning") name = "warn";
  spdlog::level::level_enum lv = spdlog::level::from_str(name);
  // from_str answers "off" for anything it does not know.
  if (lv == spdlog::level::off && name != "off")
    throw std::invalid_argument("log level '" + level + "' (METATUNE_LOG or --log-level): " +
                                "expected trace, debug, info, warn, error, critical or off");
  static bool installed = false;
  if (!installed) {
    // Through the terminal that also shows the progress line: a log line never runs into it.
    auto sink = std::make_shared<TerminalLogSink>(Terminal::standard_error());
    auto logger = std::make_shared<spdlog::logger>("metatune", sink);
    logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    spdlog::set_default_logger(logger);
    installed = true;
  }
  spdlog::set_level(lv);
  set_plugin_log_sink([](int plugin_level, std::string_view message) {
    switch (plugin_level) {
    case MT_LOG_DEBUG:
      spdlog::debug("{}", message);
      break;
    case MT_LOG_INFO:
      spdlog::info("{}", message);
      break;
    case MT_LOG_WARNING:
      spdlog::warn("{}", message);
      break;
    default:
      spdlog::error("{}", message);
      break;
    }
  });
}

} // namespace mt
