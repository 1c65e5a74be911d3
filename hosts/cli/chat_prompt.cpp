// --chat / --system / --messages (see chat_prompt.h).
#include "hosts/cli/chat_prompt.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "core/tokenizer/chat_template.h"

namespace mt::cli {

void add_chat_options(CLI::App* cmd, ChatOptions& o) {
  auto* chat = cmd->add_option("--chat", o.chat,
                               "One user turn, put into the prompt by the checkpoint's chat "
                               "template (its role headers, BOS, default system prompt)");
  cmd->add_option("--system", o.system, "With --chat: a system turn before it")->needs(chat);
  auto* messages = cmd->add_option(
      "--messages", o.messages,
      "A conversation as JSON ('-': stdin): a list of {\"role\", \"content\"} messages, or an "
      "object with \"messages\" and the template's other variables (\"tools\", "
      "\"enable_thinking\", ...)");
  chat->excludes(messages);
  cmd->add_flag("--no-generation-prompt", o.no_generation_prompt,
                "Render the conversation without the assistant's turn header at the end");
}

std::string chat_prompt(const ChatOptions& o, const std::string& dir) {
  const std::optional<tok::ChatTemplate> tpl = tok::ChatTemplate::load(dir);
  if (!tpl)
    throw std::invalid_argument(dir + " has no chat template (chat_template.jinja, or "
                                      "tokenizer_config.json's \"chat_template\"): write the "
                                      "prompt out with --prompt instead (docs/models.md)");
  const bool generation = !o.no_generation_prompt;
  if (!o.chat.empty()) {
    std::vector<tok::ChatMessage> turns;
    if (!o.system.empty()) turns.push_back({"system", o.system});
    turns.push_back({"user", o.chat});
    return tpl->render(turns, generation);
  }
  std::ostringstream text;
  if (o.messages == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(o.messages, std::ios::binary);
    if (!in) throw std::invalid_argument(o.messages + ": cannot be opened");
    text << in.rdbuf();
  }
  return tpl->render_json(text.str(), generation, o.messages == "-" ? "stdin" : o.messages);
}

} // namespace mt::cli
