// The chat options of `model generate` and `tokenize`: --chat TEXT (one user turn, with
// --system TEXT before it) or --messages FILE (a conversation as JSON), rendered into the
// prompt text with the checkpoint's chat template (core/tokenizer/chat_template.h), as
// transformers' apply_chat_template would.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace mt::cli {

struct ChatOptions {
  std::string chat, system, messages;
  bool no_generation_prompt = false;
  bool given() const { return !chat.empty() || !messages.empty(); }
};

void add_chat_options(CLI::App* cmd, ChatOptions& o);

// The prompt text for the conversation of `o` with the chat template of the folder `dir`;
// throws std::invalid_argument naming the folder where it has none, and the template's or the
// file's errors as they are.
std::string chat_prompt(const ChatOptions& o, const std::string& dir);

} // namespace mt::cli
