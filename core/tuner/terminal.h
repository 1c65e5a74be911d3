// The one owner of a terminal that shows both a progress line and log lines (stderr of
// `metatune tune`). On a terminal the progress line is redrawn in place, and a log line first
// clears it and then draws it again below itself, so that a log line never runs into the
// progress text. Off a terminal (a pipe, a file, TERM=dumb) every line is a plain line and no
// control character is ever written. Thread-safe: the tuning loop shows progress while any
// thread may log.
#pragma once

#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>

namespace mt {

class Terminal {
public:
  // `interactive`: `out` is a terminal that understands \r and ESC[K. `width_fd`, when not -1,
  // is the terminal's descriptor, asked for its width so that a progress line never wraps (a
  // wrapped line cannot be cleared with \r).
  Terminal(std::ostream& out, bool interactive, int width_fd = -1);
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // The process's stderr (std::cerr); interactive when fd 2 is a terminal and TERM is not
  // "dumb". Lives as long as the process (log sinks keep a reference to it).
  static Terminal& standard_error();

  bool interactive() const { return interactive_; }

  // Interactive: replaces the progress line on the screen with `line` (no newline in it).
  // Otherwise: writes `line` as a plain line; how often is the caller's choice.
  void show_progress(std::string line);
  // Removes the progress line from the screen; nothing is redrawn after later output.
  void clear();
  // Leaves the progress line on the screen as an ordinary line; later output starts below it.
  void keep_progress();
  // Writes one log line (a newline is added when `text` has none at its end): on a terminal
  // the progress line is cleared first and drawn again after it.
  void write_line(std::string_view text);
  void flush();

private:
  std::string fit_width(std::string line) const;

  std::mutex mutex_;
  std::ostream& out_;
  bool interactive_;
  int width_fd_;
  std::string progress_; // the progress line on the screen; empty = none
};

// True when the file descriptor is a terminal.
bool is_terminal(int fd);

} // namespace mt
