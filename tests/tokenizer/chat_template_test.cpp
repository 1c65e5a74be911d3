// Chat templates (core/tokenizer/chat_template) against transformers' apply_chat_template: 15
// real templates (Llama 3, 3.1, 3.2, Qwen2.5, Qwen3, Mistral, Mistral Nemo, Gemma, Gemma 2,
// Phi-3, Phi-3.5, Zephyr, SmolLM2, DeepSeek-R1-Distill) over 128 conversations -- tools, tool
// calls, thinking, unicode, refusals -- whose text transformers itself rendered
// (data/chat_templates/cases.json, written by data/chat_templates/generate.py); and loading
// from a checkpoint folder in each form tokenizer_config.json has.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tokenizer/chat_template.h"
#include "core/tokenizer/tokenizer_error.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using nlohmann::ordered_json;

std::string read(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kData = CHAT_TEMPLATE_DATA;

TEST(ChatTemplate, RendersAsTransformersOnEveryRealTemplateCase) {
  const ordered_json cases = ordered_json::parse(read(kData + "/cases.json"));
  ASSERT_GE(cases.size(), 100u);
  size_t rendered = 0, refused = 0;
  std::set<std::string> templates;
  for (const auto& c : cases) {
    const std::string tname = c["template"].get<std::string>();
    SCOPED_TRACE(tname + " / " + c["name"].get<std::string>());
    templates.insert(tname);
    std::vector<std::pair<std::string, std::string>> tokens;
    for (const char* t : {"bos_token", "eos_token"})
      if (c.contains(t) && c[t].is_string()) tokens.emplace_back(t, c[t].get<std::string>());
    const ChatTemplate tpl(read(kData + "/templates/" + tname + ".jinja"), tname, tokens);
    ordered_json conversation = c.contains("extra") ? c["extra"] : ordered_json::object();
    conversation["messages"] = c["messages"];
    const bool gen = c["add_generation_prompt"].get<bool>();
    if (c.contains("expected")) {
      try {
        std::string got = tpl.render_json(conversation.dump(), gen);
        std::string want = c["expected"].get<std::string>();
        if (c.value("depends_on_date", false)) { // today's date, in the format the template asks
          const std::regex date(R"(\d\d [A-Z][a-z][a-z] \d\d\d\d)");
          got = std::regex_replace(got, date, "<date>");
          want = std::regex_replace(want, date, "<date>");
        }
        EXPECT_EQ(got, want);
        ++rendered;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
      }
    } else {
      try {
        tpl.render_json(conversation.dump(), gen);
        ADD_FAILURE() << "rendered; transformers refused: " << c["error"];
      } catch (const TokenizerError& e) {
        // The template's own refusal reaches the user word for word.
        if (c["error_type"] == "TemplateError") {
          EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
              << e.what();
        }
        EXPECT_NE(std::string(e.what()).find(tname), std::string::npos) << e.what();
        ++refused;
      }
    }
  }
  EXPECT_GE(templates.size(), 15u);
  EXPECT_GT(rendered, 100u);
  EXPECT_GT(refused, 10u);
}

TEST(ChatTemplate, LoadsEachFormOfACheckpointFolder) {
  testing::TempDir t;
  const std::string llama3 = read(kData + "/templates/llama-3-8b-instruct.jinja");
  EXPECT_FALSE(ChatTemplate::load(t.dir.string()));
  // tokenizer_config.json: a string, special tokens as strings or AddedToken objects.
  ordered_json cfg = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<|begin_of_text|>"}}},
                      {"eos_token", "<|eot_id|>"},
                      {"chat_template", llama3}};
  std::ofstream(t.path("tokenizer_config.json")) << cfg.dump();
  auto a = ChatTemplate::load(t.path("tokenizer.json")); // a file's folder works too
  ASSERT_TRUE(a);
  EXPECT_EQ(a->render({{"user", "Hi"}}, true),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Named templates: "default", and "tool_use" when the conversation has tools.
  cfg["chat_template"] =
      ordered_json::array({{{"name", "default"}, {"template", "D{{ messages|length }}"}},
                           {{"name", "tool_use"}, {"template", "T{{ tools|length }}"}}});
  std::ofstream(t.path("tokenizer_config.json")) << cfg.dump();
  auto b = ChatTemplate::load(t.dir.string());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->render_json(R"([{"role": "user", "content": "x"}])", false), "D1");
  EXPECT_EQ(b->render_json(R"({"messages": [], "tools": [{"a": 1}, {"b": 2}]})", false), "T2");
  // chat_template.jinja wins over the config's (transformers 5 saves it so).
  std::ofstream(t.path("chat_template.jinja")) << "J{{ bos_token }}";
  EXPECT_EQ(ChatTemplate::load(t.dir.string())->render({}, false), "J<|begin_of_text|>");
}

TEST(ChatTemplate, RefusesWhatIsNotATemplateOrAConversation) {
  testing::TempDir t;
  std::ofstream(t.path("tokenizer_config.json")) << R"({"chat_template": "{% if x %}no end"})";
  try {
    ChatTemplate::load(t.dir.string());
    FAIL() << "loaded";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("endif"), std::string::npos) << e.what();
  }
  std::ofstream(t.path("tokenizer_config.json")) << R"({"chat_template": 7})";
  EXPECT_THROW(ChatTemplate::load(t.dir.string()), TokenizerError);
  std::ofstream(t.path("tokenizer_config.json"))
      << R"({"chat_template": [{"name": "other", "template": "x"}]})";
  EXPECT_THROW(ChatTemplate::load(t.dir.string()), TokenizerError);
  std::ofstream(t.path("tokenizer_config.json")) << "{not json";
  EXPECT_THROW(ChatTemplate::load(t.dir.string()), TokenizerError);

  const ChatTemplate tpl("{{ messages[0].content }}", "inline");
  EXPECT_THROW(tpl.render_json("[1, 2]", true), TokenizerError);                 // not messages
  EXPECT_THROW(tpl.render_json("[{\"content\": \"x\"}]", true), TokenizerError); // no role
  EXPECT_THROW(tpl.render_json("{\"tools\": []}", true), TokenizerError);        // no messages
  EXPECT_THROW(tpl.render_json("[{", true), TokenizerError);
  // A template's own error reaches the caller with the template's name and line.
  const ChatTemplate raising("a\n{{ raise_exception('Only user turns, please') }}", "inline");
  try {
    raising.render({{"user", "x"}}, true);
    FAIL() << "rendered";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("inline: chat template, line 2: Only user turns, please"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace mt::tok
