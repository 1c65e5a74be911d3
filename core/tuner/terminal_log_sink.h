// The spdlog sink of the tuner's logger: every log line goes through the Terminal that also
// shows the progress line, so that a log line clears the progress line and redraws it after
// itself. The level is coloured as spdlog's colour sink does, on a terminal only.
#pragma once

#include <mutex>

#include <spdlog/sinks/base_sink.h>

#include "core/tuner/terminal.h"

namespace mt {

class TerminalLogSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  // Colours when `terminal` is interactive, NO_COLOR is unset and TERM names a colour terminal.
  explicit TerminalLogSink(Terminal& terminal);

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

private:
  Terminal& terminal_;
  bool colours_;
};

} // namespace mt
