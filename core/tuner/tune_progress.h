// The progress display of a tuning run: trials done of the budget, best GFLOPS so far, failed
// trials and elapsed time. On a terminal it is one line rewritten in place; otherwise (a log
// file, a pipe) a plain line every `period_seconds` and at the end of every batch that
// crossed a period, so that logs stay readable. Output goes through a Terminal (terminal.h),
// which keeps log lines from running into the progress line.
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>

#include "core/tuner/terminal.h"
#include "core/tuner/tuner.h"

namespace mt {

class ProgressPrinter : public TuneObserver {
public:
  explicit ProgressPrinter(Terminal& terminal, double period_seconds = 5);
  // On a Terminal of its own over `out`.
  ProgressPrinter(std::ostream& out, bool terminal, double period_seconds = 5);
  // A run that ended in an exception leaves its last progress on a line of its own, so that
  // the error message starts on a fresh line.
  ~ProgressPrinter() override;
  void on_start(const TuneProgress& p) override;
  void on_trial(const TuneProgress& p, const MeasureResult& r) override;
  void on_batch(const TuneProgress& p) override;
  void on_finish(const TuneResult& r) override;

  // "[  37/128]  best 123.4 GFLOPS  failed 2  12.3 s  matmul(...)"
  static std::string format(const TuneProgress& p);

private:
  void print(const TuneProgress& p, bool force);
  std::unique_ptr<Terminal> own_terminal_;
  Terminal& terminal_;
  double period_;
  double last_print_ = -1;
  TuneProgress last_;
  bool last_printed_ = true;
};

} // namespace mt
