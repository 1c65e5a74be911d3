// Progress display of a tuning run (see tune_progress.h).
#include "core/tuner/tune_progress.h"

#include <cstdio>

namespace mt {

ProgressPrinter::ProgressPrinter(Terminal& terminal, double period_seconds)
    : terminal_(terminal), period_(period_seconds) {}

ProgressPrinter::ProgressPrinter(std::ostream& out, bool terminal, double period_seconds)
    : own_terminal_(std::make_unique<Terminal>(out, terminal)), terminal_(*own_terminal_),
      period_(period_seconds) {}

ProgressPrinter::~ProgressPrinter() {
  terminal_.keep_progress();
}

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
  if (terminal_.interactive()) {
    terminal_.show_progress(format(p));
    return;
  }
  if (!force && last_print_ >= 0 && p.elapsed_seconds - last_print_ < period_) return;
  last_print_ = p.elapsed_seconds;
  last_printed_ = true;
  terminal_.show_progress(format(p));
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
  if (!terminal_.interactive() && !last_printed_) terminal_.show_progress(format(last_));
  terminal_.keep_progress();
}

} // namespace mt
