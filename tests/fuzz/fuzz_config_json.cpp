// libFuzzer target for the config JSON loader (config_from_json, core/model/config_json.h) and
// the JSON overrides (Config::apply_json), over the config kinds of the model tests. Any input
// may be rejected with a ConfigError; any other exception, a crash, leak, sanitizer report or
// hang is a bug, and so is an accepted config whose JSON does not read back to the same config
// and the same text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/model/config_json.h"
#include "tests/model/config_test_schemas.h"

namespace {

const mt::ConfigRegistry& registry() {
  static const mt::ConfigRegistry r = mt::test::config_test_registry();
  return r;
}

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b = "") {
  std::fprintf(stderr, "fuzz_config_json: %s\n%s\n----\n%s\n", what, a.c_str(), b.c_str());
  std::abort();
}

// The written JSON of `c` must read back to `c` and to the same text.
void check_round_trip(const mt::Config& c) {
  std::string json = mt::config_to_json(c);
  mt::Config back;
  try {
    back = mt::config_from_json(registry(), json);
  } catch (const mt::ConfigError& e) {
    fail("written JSON rejected", e.what(), json);
  }
  if (!(back == c)) fail("config read back differs", json);
  std::string again = mt::config_to_json(back);
  if (again != json) fail("JSON round trip differs", json, again);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    mt::Config c = mt::config_from_json(registry(), text, "fuzz.json");
    check_round_trip(c);
    // The tree operations must cope with whatever the loader accepts.
    (void)c.missing_required();
    c.visit([](const std::string&, const mt::Config&) {});
    try {
      c.resolve();
      check_round_trip(c);
    } catch (const mt::ConfigError&) {
    }
  } catch (const mt::ConfigError&) {
  }
  try {
    mt::Config c = registry().make("Experiment").clone_json(text, &registry());
    check_round_trip(c);
  } catch (const mt::ConfigError&) {
  }
  return 0;
}
