// The progress display of a tuning run: trials done of the budget, best GFLOPS so far, failed
// trials and elapsed time. On a terminal it is one line rewritten in place; otherwise (a log
// file, a pipe) a plain line every `period_seconds` and at the end of every batch that
// crossed a period, so that logs stay readable.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

#include "core/tuner/tuner.h"

namespace mt {

class ProgressPrinter : public TuneObserver {
public:
  ProgressPrinter(std::ostream& out, bool terminal, double period_seconds = 5);
  void on_start(const TuneProgress& p) override;
  void on_trial(const TuneProgress& p, const MeasureResult& r) override;
  void on_batch(const TuneProgress& p) override;
  void on_finish(const TuneResult& r) override;

  // "[  37/128]  best 123.4 GFLOPS  failed 2  12.3 s  matmul(...)"
  static std::string format(const TuneProgress& p);

private:
  void print(const TuneProgress& p, bool force);
  std::ostream& out_;
  bool terminal_;
  double period_;
  double last_print_ = -1;
  bool line_open_ = false;
  TuneProgress last_;
  bool last_printed_ = true;
};

// True when the file descriptor is a terminal (progress rewrites its line there).
bool is_terminal(int fd);

} // namespace mt
