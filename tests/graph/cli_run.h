// The metatune binary of this build (or another program) run by the graph tests: its exit
// status and what it printed (stdout and stderr together).
#pragma once

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

// The float32 values of an .npy file of version 1.0 (what --save-output writes).
inline std::vector<float> read_npy_floats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10) return {};
  const size_t header = 10 + static_cast<unsigned char>(bytes[8]) +
                        256 * static_cast<size_t>(static_cast<unsigned char>(bytes[9]));
  std::vector<float> v((bytes.size() - header) / sizeof(float));
  std::memcpy(v.data(), bytes.data() + header, v.size() * sizeof(float));
  return v;
}

} // namespace mt::graph_test
