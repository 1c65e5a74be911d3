// A checkpoint's chat template: the Jinja program (chat_template.jinja, or tokenizer_config.json's
// "chat_template") that turns a conversation into the prompt text an instruct model was trained
// on -- its role headers, turn separators, BOS, default system prompt, tool schemas. Rendered as
// transformers' apply_chat_template renders it (core/jinja; its variables, its tojson, its
// raise_exception and strftime_now), so the prompt's ids are the ones Python would give.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/jinja/template.h"
#include "core/jinja/value.h"

namespace mt::tok {

struct ChatMessage {
  std::string role; // "system", "user", "assistant", "tool", ...
  std::string content;
};

// The functions transformers gives a chat template besides Jinja's own:
// raise_exception(message), which refuses the conversation with that message, and
// strftime_now(format), the local time now.
jinja::Dict chat_template_functions();

// JSON text as template values (objects as dicts in the order written); throws
// std::invalid_argument for text that is not JSON.
jinja::Value json_to_value(std::string_view json);

class ChatTemplate {
public:
  // The template of a checkpoint folder (or of the folder of a tokenizer file given as path):
  // DIR/chat_template.jinja, else tokenizer_config.json's chat_template -- a string, or a list
  // of named templates of which "default" (or, with tools, "tool_use") is taken. nullopt where
  // the folder has neither. Throws TokenizerError naming the file for a malformed one (bad
  // JSON, a template that does not parse, with its line).
  static std::optional<ChatTemplate> load(const std::string& path);
  // A template given as text; `origin` names it in errors; `special_tokens` are the variables
  // bos_token, eos_token, ... that it may print (name, text).
  ChatTemplate(std::string_view source, std::string origin,
               std::vector<std::pair<std::string, std::string>> special_tokens = {});

  // The prompt text of `messages`; with add_generation_prompt, ending where the assistant's
  // reply starts. Throws TokenizerError naming the template (and its line) where it refuses
  // the conversation (roles that do not alternate, a system message it does not take...).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The same for a conversation written as JSON: a list of messages (objects with "role",
  // "content" and whatever else the template reads: "tool_calls", "reasoning_content", ...),
  // or an object with "messages" and other variables: "tools", "documents",
  // "add_generation_prompt", "enable_thinking", "date_string", ... Throws TokenizerError for
  // JSON that is not such a conversation, naming `what` (e.g. the file it came from).
  std::string render_json(std::string_view conversation, bool add_generation_prompt,
                          const std::string& what = "the conversation") const;

  // The most statements and loop iterations a render may run (jinja::Template::render);
  // a fuzzer lowers it.
  void limit_steps(int64_t max_steps) { max_steps_ = max_steps; }

  // Where it was read from: "DIR/tokenizer_config.json", "DIR/chat_template.jinja".
  const std::string& origin() const { return origin_; }
  // The template's text.
  const std::string& source() const { return source_; }

private:
  std::string source_, origin_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
  int64_t max_steps_ = jinja::Template::kDefaultMaxSteps;
  // Named templates of tokenizer_config.json other than the one in use: "tool_use" is taken
  // for conversations with tools.
  std::shared_ptr<const ChatTemplate> tool_use_;
  std::shared_ptr<const jinja::Template> template_;
};

} // namespace mt::tok
