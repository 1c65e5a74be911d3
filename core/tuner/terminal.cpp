// A terminal shared by a progress line and log lines (see terminal.h).
#include "core/tuner/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace mt {

namespace {

// Erases the cursor's row: back to its start, then clear to its end.
constexpr const char* kEraseRow = "\r\x1b[K";

} // namespace

bool is_terminal(int fd) {
  return isatty(fd) != 0;
}

Terminal::Terminal(std::ostream& out, bool interactive, int width_fd)
    : out_(out), interactive_(interactive), width_fd_(width_fd) {}

Terminal& Terminal::standard_error() {
  static Terminal* t = [] {
    const char* term = std::getenv("TERM");
    bool dumb = term && std::strcmp(term, "dumb") == 0;
    // Never destroyed: loggers may still write while static objects are torn down.
    return new Terminal(std::cerr, is_terminal(2) && !dumb, 2);
  }();
  return *t;
}

std::string Terminal::fit_width(std::string line) const {
  winsize ws{};
  if (width_fd_ < 0 || ::ioctl(width_fd_, TIOCGWINSZ, &ws) != 0 || ws.ws_col < 2) return line;
  // One column short of the width: a line that fills the last column leaves some terminals
  // waiting to wrap, and the next \r would then return to the wrong row.
  size_t room = ws.ws_col - 1u;
  if (line.size() > room) line.resize(room);
  return line;
}

void Terminal::show_progress(std::string line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!interactive_) {
    out_ << line << '\n' << std::flush;
    return;
  }
  progress_ = fit_width(std::move(line));
  // \r then the line then ESC[K (what a longer previous line left behind): one write, no
  // flicker of an empty row.
  out_ << '\r' << progress_ << "\x1b[K" << std::flush;
}

void Terminal::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (progress_.empty()) return;
  out_ << kEraseRow << std::flush;
  progress_.clear();
}

void Terminal::keep_progress() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (progress_.empty()) return;
  out_ << '\n' << std::flush;
  progress_.clear();
}

void Terminal::write_line(std::string_view text) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool redraw = interactive_ && !progress_.empty();
  std::string s = redraw ? kEraseRow : "";
  s += text;
  if (text.empty() || text.back() != '\n') s += '\n';
  if (redraw) s += progress_;
  out_.write(s.data(), static_cast<std::streamsize>(s.size()));
  out_.flush();
}

void Terminal::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  out_.flush();
}

} // namespace mt
