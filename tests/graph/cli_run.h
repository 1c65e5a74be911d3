// The metatune binary of this build (or another program) run by the graph tests: its exit
// status and what it printed (stdout and stderr together).
#pragma once

#include <cstdio>
#include <string>

namespace mt::graph_test {

struct CliResult {
  int status;
  std::string output;
};

// `command` (a program and its arguments) through the shell.
inline CliResult run_program(const std::string& command) {
  std::string cmd = command + " 2>&1";
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

inline CliResult metatune(const std::string& args) {
  return run_program(std::string(METATUNE_CLI) + " " + args);
}

} // namespace mt::graph_test
