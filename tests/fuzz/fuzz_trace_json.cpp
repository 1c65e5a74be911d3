// libFuzzer target for the trace JSON parser (Trace::from_json, core/schedule/trace.h). Any
// input may be rejected with an exception derived from std::exception; a crash, leak, sanitizer
// report or hang is a bug, and so is an accepted trace whose JSON does not read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/schedule/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  mt::Trace t;
  try {
    t = mt::Trace::from_json(text);
  } catch (const std::exception&) {
    return 0;
  }
  std::string json = t.to_json();
  std::string again;
  try {
    again = mt::Trace::from_json(json).to_json();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_trace_json: to_json output rejected: %s\n%s\n", e.what(),
                 json.c_str());
    std::abort();
  }
  if (again != json) {
    std::fprintf(stderr, "fuzz_trace_json: JSON round trip differs\n%s\n----\n%s\n", json.c_str(),
                 again.c_str());
    std::abort();
  }
  return 0;
}
