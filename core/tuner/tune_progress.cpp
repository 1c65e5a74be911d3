// Progress display of a tuning run (see tune_progress.h).
#include "core/tuner/tune_progress.h"

#include <unistd.h>

#include <cstdio>
#include <ostream>

namespace mt {

bool is_terminal(int fd) {
  return isatty(fd) != 0;
}

ProgressPrinter::ProgressPrinter(std::ostream& out, bool terminal, double period_seconds)
    : out_(out), terminal_(terminal), period_(period_seconds) {}

std::string ProgressPrinter::format(const TuneProgress& p) {
  char buf[256];
  int width = static_cast<int>(std::to_string(p.trials_total).size());
  std::snprintf(buf, sizeof buf, "[%*zu/%zu]  best %8.2f GFLOPS  failed %zu  %6.1f s", width,
                p.trials_done, p.trials_total, p.best_gflops, p.failed_run, p.elapsed_seconds);
  std::string s = buf;
  if (!p.task_spec.empty()) s += "  " + p.task_spec;
  return s;
}

void ProgressPrinter::print(const TuneProgress& p, bool force) {
  last_ = p;
  last_printed_ = false;
  if (terminal_) {
    // Rewrite the line; \x1b[K clears what a longer previous line left behind.
    out_ << "\r" << format(p) << "\x1b[K" << std::flush;
    line_open_ = true;
    return;
  }
  if (!force && last_print_ >= 0 && p.elapsed_seconds - last_print_ < period_) return;
  last_print_ = p.elapsed_seconds;
  last_printed_ = true;
  out_ << format(p) << "\n" << std::flush;
}

void ProgressPrinter::on_start(const TuneProgress& p) {
  print(p, true);
}

void ProgressPrinter::on_trial(const TuneProgress& p, const MeasureResult&) {
  print(p, false);
}

void ProgressPrinter::on_batch(const TuneProgress& p) {
  print(p, false);
}

void ProgressPrinter::on_finish(const TuneResult&) {
  // Where lines are periodic, the last state is always shown.
  if (!terminal_ && !last_printed_) out_ << format(last_) << "\n";
  if (line_open_) out_ << "\n" << std::flush;
  line_open_ = false;
}

} // namespace mt
