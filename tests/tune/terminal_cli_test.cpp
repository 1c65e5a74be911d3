// `metatune tune` as a person sees it in a terminal (the CLI on a pseudo-terminal, read back
// through screen.h) and as a log file or pipe receives it: in the terminal no log line shares
// a row with the progress text and the progress line comes back after each one; on a pipe no
// control character is written at all; and either way oneDNN's recognition of the program is
// said once, though the library's kernel is built many times over (its trial, the fresh-worker
// re-measurements, the side-by-side comparison).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "screen.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using tune_test::Screen;

const char* kSpec = "matmul(M=64,N=64,K=64)";

bool onednn_built() {
  return fs::exists(fs::path(METATUNE_BUILD_PLUGIN_DIR) / "onednn_cpu.so");
}

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("mt_terminal_cli_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
};

// A small run that logs while its progress line shows: the library candidate (oneDNN, when
// built) and the re-measurement of the fastest records at the end.
std::vector<std::string> tune_args(const fs::path& db) {
  std::vector<std::string> a{"tune",        "--workload",      kSpec,  "--target",
                             "llvm",        "--trials",        "16",   "--db",
                             db.string(),   "--seed",          "1",    "--batch-size",
                             "4",           "--repeats",       "1",    "--min-repeat-ms",
                             "1",           "--population",    "32",   "--cost-model",
                             "cost.Random", "--log-level",     "info", "--verify-top",
                             "3",           "--verify-rounds", "2"};
  if (onednn_built()) {
    for (const char* s : {"--library", "onednn.cpu", "--compare-repeats", "2"})
      a.push_back(s);
  } else {
    a.push_back("--no-library");
  }
  return a;
}

struct CliOutput {
  int status = -1;
  std::string bytes; // stdout and stderr together, as the terminal or pipe received them
};

[[noreturn]] void exec_cli(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::string exe = METATUNE_CLI;
  std::vector<char*> argv{exe.data()};
  for (auto& a : copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(exe.c_str(), argv.data());
  _exit(127);
}

// Reads `fd` until end of output (EOF, or EIO once a terminal's last writer closed it) or
// the time limit, then reaps `pid`.
CliOutput collect(int fd, pid_t pid) {
  CliOutput r;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      ADD_FAILURE() << "the run took longer than 300 s";
      break;
    }
    if (n == 0) continue;
    ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.bytes.append(buf, static_cast<size_t>(got));
  }
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// On a pseudo-terminal 200 columns wide (room for the progress line), TERM a colour terminal.
CliOutput run_on_terminal(const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_row = 50;
  ws.ws_col = 200;
  if (openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
    ADD_FAILURE() << "openpty failed: " << std::strerror(errno);
    return {};
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(master);
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    if (slave > 2) close(slave);
    setenv("TERM", "xterm-256color", 1);
    unsetenv("METATUNE_LOG");
    exec_cli(args);
  }
  close(slave);
  return collect(master, pid);
}

CliOutput run_on_pipe(const std::vector<std::string>& args) {
  int p[2];
  if (pipe(p) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[1]);
    // A terminal type is no reason to write control sequences into a pipe.
    setenv("TERM", "xterm-256color", 1);
    unsetenv("METATUNE_LOG");
    exec_cli(args);
  }
  close(p[1]);
  return collect(p[0], pid);
}

// spdlog's line start: "[09:22:05.926] [".
const std::regex kLogStart(R"(\[\d\d:\d\d:\d\d\.\d\d\d\] \[)");
// The progress line's start: "[ 3/16]  best".
const std::regex kProgressStart(R"(^\[ *\d+/\d+\]  best )");

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

std::string joined(const std::vector<std::string>& rows) {
  std::string s;
  for (const auto& r : rows)
    s += r + "\n";
  return s;
}

TEST(TerminalCli, LogLinesNeverRunIntoTheProgressLine) {
  TempDir d;
  CliOutput r = run_on_terminal(tune_args(d.dir / "t.db"));
  ASSERT_EQ(r.status, 0) << r.bytes;
  Screen screen;
  screen.feed(r.bytes);
  std::vector<std::string> rows = screen.finished_rows();
  std::string shown = joined(rows);

  size_t log_rows = 0;
  for (const std::string& row : rows) {
    std::smatch m;
    if (!std::regex_search(row, m, kLogStart)) continue;
    ++log_rows;
    // A log line starts its row, and no progress text is left in it.
    EXPECT_EQ(m.position(0), 0) << "log line after other text: " << row;
    EXPECT_EQ(row.find("GFLOPS  failed "), std::string::npos) << "progress left in: " << row;
  }
  EXPECT_GT(log_rows, 0u) << shown;
  // The last progress state stays on the screen as a row of its own.
  EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [](const std::string& row) {
    return std::regex_search(row, kProgressStart);
  })) << shown;

  // In the byte stream: every log line written while the progress line showed was preceded
  // by the erase sequence and followed by the progress line drawn again.
  size_t interrupted = 0;
  for (size_t at = r.bytes.find("\r\x1b[K["); at != std::string::npos;
       at = r.bytes.find("\r\x1b[K[", at + 1)) {
    std::string rest = r.bytes.substr(at + 4);
    if (!std::regex_search(rest.substr(0, 16), kLogStart)) continue;
    ++interrupted;
    size_t nl = rest.find('\n');
    ASSERT_NE(nl, std::string::npos);
    std::string after = rest.substr(nl + 1, 40);
    EXPECT_TRUE(std::regex_search(after, kProgressStart))
        << "not redrawn after the log line: " << rest.substr(0, nl + 41);
  }
  EXPECT_GT(interrupted, 0u) << "no log line came while the progress line showed: " << shown;

  if (onednn_built()) {
    EXPECT_EQ(count_of(shown, "onednn.cpu: matmul -> "), 1u) << shown;
  }
}

TEST(TerminalCli, PipeGetsNoControlCharacters) {
  TempDir d;
  CliOutput r = run_on_pipe(tune_args(d.dir / "t.db"));
  ASSERT_EQ(r.status, 0) << r.bytes;
  auto control = std::find_if(r.bytes.begin(), r.bytes.end(), [](char c) {
    return c != '\n' && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
  });
  EXPECT_EQ(control, r.bytes.end())
      << "control character " << (control == r.bytes.end() ? 0 : int(*control)) << " at "
      << (control - r.bytes.begin()) << " in:\n"
      << r.bytes;
  EXPECT_TRUE(std::regex_search(r.bytes, kLogStart)) << r.bytes;
  if (onednn_built()) {
    EXPECT_EQ(count_of(r.bytes, "onednn.cpu: matmul -> "), 1u) << r.bytes;
  }
}

} // namespace
} // namespace mt
