// Shared by the tests: an environment variable set (or unset: nullopt) for one scope, and what
// was there before put back at its end.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace mt::test {

struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, std::optional<std::string> value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      setenv(n, value->c_str(), 1);
    else
      unsetenv(n);
  }
  ~ScopedEnv() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

} // namespace mt::test
