// Loading and rendering a checkpoint's chat template (see chat_template.h).
#include "core/tokenizer/chat_template.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/jinja/error.h"
#include "core/jinja/template.h"
#include "core/tokenizer/tokenizer_error.h"

namespace mt::tok {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw TokenizerError(p.string(), "", "cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

jinja::Value to_value(const Json& j) {
  switch (j.type()) {
  case Json::value_t::null:
    return jinja::None{};
  case Json::value_t::boolean:
    return j.get<bool>();
  case Json::value_t::number_integer:
    return j.get<int64_t>();
  case Json::value_t::number_unsigned:
    return static_cast<int64_t>(j.get<uint64_t>());
  case Json::value_t::number_float:
    return j.get<double>();
  case Json::value_t::string:
    return j.get<std::string>();
  case Json::value_t::array: {
    jinja::List l;
    for (const Json& x : j)
      l.push_back(to_value(x));
    return l;
  }
  case Json::value_t::object: {
    jinja::Dict d;
    for (auto it = j.begin(); it != j.end(); ++it)
      d.emplace_back(it.key(), to_value(it.value()));
    return d;
  }
  default:
    return jinja::None{};
  }
}

// A message as transformers hands it to the template: the keys whose value is null dropped,
// and its reasoning (reasoning_content, thinking or reasoning) under both names templates read
// it by: "thinking" first, "reasoning_content" where it was or last.
jinja::Value message_value(const Json& m, const std::string& what, size_t index) {
  if (!m.is_object())
    throw TokenizerError(what, "messages[" + std::to_string(index) + "]",
                         "is not an object with \"role\" and \"content\"");
  if (!m.contains("role") || !m["role"].is_string())
    throw TokenizerError(what, "messages[" + std::to_string(index) + "]", "has no \"role\" string");
  Json kept = Json::object();
  for (auto it = m.begin(); it != m.end(); ++it)
    if (!it.value().is_null()) kept[it.key()] = it.value();
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    if (!kept.contains(key)) continue;
    const Json r = kept[key];
    Json aliased = Json::object();
    aliased["thinking"] = r;
    for (auto it = kept.begin(); it != kept.end(); ++it)
      if (it.key() != "thinking") aliased[it.key()] = it.value();
    aliased["reasoning_content"] = r;
    kept = std::move(aliased);
    break;
  }
  return to_value(kept);
}

// transformers' strftime_now(format): the local time now, as Python's strftime writes it.
jinja::Value strftime_now(const jinja::Args& a) {
  const jinja::Value* f = a.get("format", 0);
  if (!f || !f->is_string()) throw std::invalid_argument("strftime_now takes a format string");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof buf, f->as_string().c_str(), &tm);
  return std::string(buf, n);
}

// A special token of tokenizer_config.json: a string, or an AddedToken object with "content".
std::optional<std::string> token_text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string())
    return j["content"].get<std::string>();
  return std::nullopt;
}

} // namespace

jinja::Value json_to_value(std::string_view json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument("not valid JSON");
  return to_value(j);
}

jinja::Dict chat_template_functions() {
  jinja::Dict f;
  f.emplace_back("raise_exception", jinja::Function([](const jinja::Args& a) -> jinja::Value {
                   throw jinja::TemplateError(a.positional.empty() ? "" : a.positional[0].str(), 0);
                 }));
  f.emplace_back("strftime_now", jinja::Function(strftime_now));
  return f;
}

ChatTemplate::ChatTemplate(std::string_view source, std::string origin,
                           std::vector<std::pair<std::string, std::string>> special_tokens)
    : source_(source), origin_(std::move(origin)), special_tokens_(std::move(special_tokens)) {
  try {
    template_ = std::make_shared<jinja::Template>(source);
  } catch (const jinja::TemplateError& e) {
    throw TokenizerError(origin_, "chat template", e.what());
  }
}

std::optional<ChatTemplate> ChatTemplate::load(const std::string& path) {
  fs::path dir(path);
  if (!fs::is_directory(dir)) dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  const fs::path config = dir / "tokenizer_config.json", jinja_file = dir / "chat_template.jinja";
  Json cfg = Json::object();
  if (fs::exists(config)) {
    const std::string text = read_text(config);
    cfg = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (cfg.is_discarded() || !cfg.is_object())
      throw TokenizerError(config.string(), "", "is not a JSON object");
  }
  std::vector<std::pair<std::string, std::string>> tokens;
  for (const char* name :
       {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"})
    if (cfg.contains(name))
      if (auto t = token_text(cfg[name])) tokens.emplace_back(name, *t);
  if (fs::exists(jinja_file))
    return ChatTemplate(read_text(jinja_file), jinja_file.string(), tokens);
  if (!cfg.contains("chat_template") || cfg["chat_template"].is_null()) return std::nullopt;
  const Json& t = cfg["chat_template"];
  if (t.is_string()) return ChatTemplate(t.get<std::string>(), config.string(), tokens);
  if (!t.is_array())
    throw TokenizerError(config.string(), "chat_template",
                         "is neither a template string nor a list of named templates");
  std::optional<ChatTemplate> chosen;
  std::shared_ptr<const ChatTemplate> tool_use;
  std::string names;
  for (size_t i = 0; i < t.size(); ++i) {
    const Json& e = t[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("template") || !e["template"].is_string())
      throw TokenizerError(config.string(), "chat_template[" + std::to_string(i) + "]",
                           "is not an object with \"name\" and \"template\" strings");
    const std::string name = e["name"].get<std::string>();
    names += (names.empty() ? "" : ", ") + name;
    const std::string origin = config.string() + " (template '" + name + "')";
    if (name == "default") chosen.emplace(e["template"].get<std::string>(), origin, tokens);
    if (name == "tool_use")
      tool_use = std::make_shared<ChatTemplate>(e["template"].get<std::string>(), origin, tokens);
  }
  if (!chosen) {
    if (!tool_use)
      throw TokenizerError(config.string(), "chat_template",
                           "names no 'default' template (it has: " + names + ")");
    chosen.emplace(*tool_use);
  }
  chosen->tool_use_ = std::move(tool_use);
  return chosen;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  Json list = Json::array();
  for (const ChatMessage& m : messages)
    list.push_back({{"role", m.role}, {"content", m.content}});
  return render_json(list.dump(), add_generation_prompt);
}

std::string ChatTemplate::render_json(std::string_view conversation, bool add_generation_prompt,
                                      const std::string& what) const {
  Json j = Json::parse(conversation, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw TokenizerError(what, "", "is not valid JSON");
  Json messages = j;
  Json variables = Json::object();
  if (j.is_object()) {
    if (!j.contains("messages"))
      throw TokenizerError(what, "",
                           "is an object without \"messages\" (give a list of messages, "
                           "or an object with \"messages\" and other variables)");
    messages = j["messages"];
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "messages") variables[it.key()] = it.value();
  }
  if (!messages.is_array()) throw TokenizerError(what, "messages", "is not a list");
  const bool has_tools = variables.contains("tools") && !variables["tools"].is_null();
  if (has_tools && tool_use_ && tool_use_.get() != this) {
    ChatTemplate tool_use = *tool_use_;
    tool_use.limit_steps(max_steps_);
    return tool_use.render_json(conversation, add_generation_prompt, what);
  }

  jinja::List msgs;
  for (size_t i = 0; i < messages.size(); ++i)
    msgs.push_back(message_value(messages[i], what, i));
  // As transformers: the special tokens, then the caller's variables over them; tools and
  // documents always there (None when not given).
  jinja::Dict vars;
  auto set = [&vars](const std::string& k, jinja::Value v) {
    for (auto& [key, old] : vars)
      if (key.as_string() == k) {
        old = std::move(v);
        return;
      }
    vars.emplace_back(k, std::move(v));
  };
  for (const auto& [k, v] : special_tokens_)
    set(k, v);
  set("messages", msgs);
  set("tools", jinja::None{});
  set("documents", jinja::None{});
  set("add_generation_prompt", add_generation_prompt);
  for (auto it = variables.begin(); it != variables.end(); ++it)
    set(it.key(), to_value(it.value()));
  for (auto& [k, f] : chat_template_functions())
    set(k.as_string(), f);
  try {
    return template_->render(vars, max_steps_);
  } catch (const jinja::TemplateError& e) {
    throw TokenizerError(origin_,
                         e.line() > 0 ? "chat template, line " + std::to_string(e.line()) + ":"
                                      : "chat template:",
                         e.message());
  }
}

} // namespace mt::tok
