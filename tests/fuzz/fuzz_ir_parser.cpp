// libFuzzer target for the IR text parser (core/ir/parser.h). Any input may be rejected with a
// ParseError; a crash, leak, sanitizer report, hang, another exception type, or an accepted
// input whose print does not parse back to the same print and structure is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/ir/parser.h"
#include "core/ir/printer.h"
#include "core/ir/structural.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_ir_parser: %s\n%s\n", what, detail.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  mt::Function f;
  try {
    f = mt::parse_function(text);
  } catch (const mt::ParseError& e) {
    // The message must carry a location inside (or just past) the input.
    if (e.line() < 1 || e.column() < 1) fail("ParseError without a location", e.what());
    return 0;
  }
  std::string printed = mt::print(f);
  mt::Function g;
  try {
    g = mt::parse_function(printed, "<printed>");
  } catch (const mt::ParseError& e) {
    fail("printed function does not parse", std::string(e.what()) + "\n" + printed);
  }
  std::string reprinted = mt::print(g);
  if (reprinted != printed)
    fail("print(parse(print(f))) != print(f)", printed + "\n----\n" + reprinted);
  if (!mt::structural_equal(f, g)) fail("parsed print is not structurally equal", printed);
  if (mt::structural_hash(f) != mt::structural_hash(g)) fail("structural hash differs", printed);
  return 0;
}
