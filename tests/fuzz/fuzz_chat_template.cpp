// libFuzzer target for chat templates (core/tokenizer/chat_template over core/jinja), fed
// template texts: any text may be refused, at parsing or at rendering, but only with a
// TokenizerError naming the template; a crash, sanitizer report, hang, or any other exception
// is a bug. Each template that parses is rendered with a conversation that has every kind of
// message and a tool, with and without the generation prompt.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/tokenizer/chat_template.h"
#include "core/tokenizer/tokenizer_error.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_chat_template: %s\n", what.c_str());
  std::abort();
}

constexpr const char* kConversation = R"({"messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "  Hi \u00e9 \ud83d\ude42 "},
  {"role": "assistant", "content": "Hello.", "reasoning_content": "think",
   "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5, null]}}}]},
  {"role": "tool", "content": "{\"ok\": true}"},
  {"role": "user", "content": ""}],
 "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
 "enable_thinking": false})";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    mt::tok::ChatTemplate t(source, "fuzz", {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    t.limit_steps(20000); // loops over big ranges stop well inside the run's timeout
    for (bool generation : {false, true}) {
      try {
        (void)t.render_json(kConversation, generation);
        (void)t.render({{"user", "x"}}, generation);
      } catch (const mt::tok::TokenizerError&) {
      }
    }
  } catch (const mt::tok::TokenizerError&) {
  } catch (const std::exception& e) {
    bug(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
