// The Terminal shared by the progress line and log lines (core/tuner/terminal.h), read back
// through a model of what a terminal shows (screen.h): a log line never shares a row with the
// progress text, the progress line comes back below it, and off a terminal nothing but plain
// lines is written.
#include <gtest/gtest.h>

#include <pty.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/tuner/terminal.h"
#include "screen.h"

namespace mt {
namespace {

using tune_test::Screen;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

bool has_control_characters_but_newlines(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    return c != '\n' && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
  });
}

TEST(Terminal, LogLineClearsTheProgressLineAndRedrawsItBelow) {
  std::ostringstream out;
  Terminal t(out, /*interactive=*/true);
  t.show_progress("[ 1/10]  best 1.00 GFLOPS  failed 0  a long task name");
  t.write_line("[info] short");
  Screen s;
  s.feed(out.str());
  EXPECT_EQ(s.finished_rows(), std::vector<std::string>{"[info] short"});
  EXPECT_EQ(s.current_row(), "[ 1/10]  best 1.00 GFLOPS  failed 0  a long task name");

  // A shorter progress line leaves nothing of the longer one behind.
  t.show_progress("[ 2/10]  best 2.00 GFLOPS");
  Screen s2;
  s2.feed(out.str());
  EXPECT_EQ(s2.current_row(), "[ 2/10]  best 2.00 GFLOPS");

  // Kept: it stays as a row of its own, and what comes next is not followed by it.
  t.keep_progress();
  t.write_line("[info] after\n");
  Screen s3;
  s3.feed(out.str());
  EXPECT_EQ(s3.finished_rows(), (std::vector<std::string>{
                                    "[info] short", "[ 2/10]  best 2.00 GFLOPS", "[info] after"}));
  EXPECT_EQ(s3.current_row(), "");
}

TEST(Terminal, ClearedProgressIsNotRedrawn) {
  std::ostringstream out;
  Terminal t(out, /*interactive=*/true);
  t.show_progress("[ 1/10]  best 1.00 GFLOPS");
  t.clear();
  Screen s;
  s.feed(out.str());
  EXPECT_EQ(s.current_row(), "");
  t.write_line("[info] log");
  Screen s2;
  s2.feed(out.str());
  EXPECT_EQ(s2.finished_rows(), std::vector<std::string>{"[info] log"});
  EXPECT_EQ(s2.current_row(), "");
}

TEST(Terminal, OffATerminalEveryLineIsPlain) {
  std::ostringstream out;
  Terminal t(out, /*interactive=*/false);
  t.show_progress("[ 1/10]");
  t.write_line("[info] one");
  t.show_progress("[ 2/10]");
  t.clear();
  t.write_line("[info] two");
  t.keep_progress();
  std::string text = out.str();
  EXPECT_FALSE(has_control_characters_but_newlines(text)) << text;
  EXPECT_EQ(lines_of(text),
            (std::vector<std::string>{"[ 1/10]", "[info] one", "[ 2/10]", "[info] two"}));
}

// A progress line wider than the terminal would wrap, and \r would then go back to its last
// row only: it is cut one column short of the width.
TEST(Terminal, ProgressLineFitsTheTerminalWidth) {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 20;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  std::ostringstream out;
  Terminal t(out, /*interactive=*/true, /*width_fd=*/slave);
  std::string wide = "[ 1/10]  best 1.00 GFLOPS  failed 0";
  t.show_progress(wide);
  t.write_line("[info] a log line longer than the terminal is wide");
  close(slave);
  close(master);
  Screen s;
  s.feed(out.str());
  EXPECT_EQ(s.current_row(), wide.substr(0, 19));
  // Log lines are not cut: they may wrap, nothing is redrawn over them.
  EXPECT_EQ(s.finished_rows(),
            std::vector<std::string>{"[info] a log line longer than the terminal is wide"});
}

// Log lines from several threads while the progress line changes: every row that ends is
// exactly one log line, all of them are there, and the row under the cursor is the progress.
TEST(Terminal, ThreadsLoggingWhileProgressChanges) {
  std::ostringstream out;
  Terminal t(out, /*interactive=*/true);
  constexpr int kThreads = 4, kLines = 200;
  t.show_progress("[  0/200]  best 0.00 GFLOPS");
  std::vector<std::thread> loggers;
  for (int k = 0; k < kThreads; ++k)
    loggers.emplace_back([&t, k] {
      for (int i = 0; i < kLines; ++i)
        t.write_line("[info] thread " + std::to_string(k) + " line " + std::to_string(i));
    });
  std::string last;
  for (int i = 1; i <= 200; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "[%3d/200]  best %.2f GFLOPS", i, i * 0.5);
    last = buf;
    t.show_progress(last);
  }
  for (auto& th : loggers)
    th.join();
  Screen s;
  s.feed(out.str());
  std::vector<std::string> rows = s.finished_rows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(kThreads * kLines));
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> expected;
  for (int k = 0; k < kThreads; ++k)
    for (int i = 0; i < kLines; ++i)
      expected.push_back("[info] thread " + std::to_string(k) + " line " + std::to_string(i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(s.current_row(), last);
}

} // namespace
} // namespace mt
