// The metatune binary of this build run by the graph tests: its exit status and what it
// printed (stdout and stderr together).
#pragma once

#include <cstdio>
#include <string>

namespace mt::graph_test {

struct CliResult {
  int status;
  std::string output;
};

inline CliResult metatune(const std::string& args) {
  std::string cmd = std::string(METATUNE_CLI) + " " + args + " 2>&1";
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

} // namespace mt::graph_test
