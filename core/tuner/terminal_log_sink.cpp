// The logger's sink on the shared terminal (see terminal_log_sink.h).
#include "core/tuner/terminal_log_sink.h"

#include <cstdlib>
#include <string>

#include <spdlog/details/os.h>

namespace mt {

namespace {

// spdlog's colour sink's choices, so that the output looks as it did.
const char* level_colour(spdlog::level::level_enum level) {
  switch (level) {
  case spdlog::level::trace:
    return "\x1b[37m";
  case spdlog::level::debug:
    return "\x1b[36m";
  case spdlog::level::info:
    return "\x1b[32m";
  case spdlog::level::warn:
    return "\x1b[33m\x1b[1m";
  case spdlog::level::err:
    return "\x1b[31m\x1b[1m";
  case spdlog::level::critical:
    return "\x1b[1m\x1b[41m";
  default:
    return "";
  }
}

} // namespace

TerminalLogSink::TerminalLogSink(Terminal& terminal)
    : terminal_(terminal), colours_(terminal.interactive() && !std::getenv("NO_COLOR") &&
                                    spdlog::details::os::is_color_terminal()) {}

void TerminalLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  std::string line;
  if (colours_ && msg.color_range_end > msg.color_range_start) {
    line.append(formatted.data(), msg.color_range_start);
    line += level_colour(msg.level);
    line.append(formatted.data() + msg.color_range_start,
                msg.color_range_end - msg.color_range_start);
    line += "\x1b[m";
    line.append(formatted.data() + msg.color_range_end, formatted.size() - msg.color_range_end);
  } else {
    line.assign(formatted.data(), formatted.size());
  }
  terminal_.write_line(line);
}

void TerminalLogSink::flush_() {
  terminal_.flush();
}

} // namespace mt
