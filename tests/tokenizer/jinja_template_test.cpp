// The Jinja engine (core/jinja) against Python's jinja2 as transformers configures it: 179
// small templates over the language -- printing, whitespace control, operators, loops, scoping,
// filters, tests, methods -- whose expected text jinja2 itself rendered
// (data/chat_templates/features.json, written by data/chat_templates/generate.py).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/jinja/error.h"
#include "core/jinja/template.h"
#include "core/tokenizer/chat_template.h"
#include <nlohmann/json.hpp>

namespace mt::tok {
namespace {

using nlohmann::ordered_json;

ordered_json load_data(const std::string& name) {
  std::ifstream in(std::string(CHAT_TEMPLATE_DATA) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  return ordered_json::parse(in);
}

// With transformers' functions (raise_exception, strftime_now) as features.json was rendered.
std::string render(const std::string& source,
                   const ordered_json& context = ordered_json::object()) {
  jinja::Dict vars = chat_template_functions();
  const jinja::Value given = json_to_value(context.dump());
  for (const auto& kv : given.as_dict())
    vars.push_back(kv);
  return jinja::Template(source).render(vars);
}

// What the engine does not implement (docs/tokenizers.md#chat-templates): no chat template
// seen uses them. It must refuse them by name, never print something else.
const std::set<std::string> kRefused = {
    "for_recursive",                                                // {% for ... recursive %}
    "macro_caller",                                                 // {% call %} and caller()
    "filter_center_truncate", "filter_format", "str_format_method", // truncate, printf, str.format
};
// The one case printed differently: a range shown as it is ("range(0, 3)" in Python) prints
// as its list here; templates only loop over ranges.
const std::set<std::string> kPrintedDifferently = {"range_print"};

TEST(JinjaTemplate, RendersAsJinja2DoesOnEveryFeatureCase) {
  const ordered_json cases = load_data("features.json");
  ASSERT_GE(cases.size(), 150u);
  size_t rendered = 0, refused = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"].get<std::string>();
    const std::string source = c["template"].get<std::string>();
    SCOPED_TRACE(name + ": " + source);
    if (kPrintedDifferently.count(name)) continue;
    if (kRefused.count(name)) {
      EXPECT_THROW(render(source, c["context"]), jinja::TemplateError);
      continue;
    }
    if (c.contains("expected")) {
      try {
        EXPECT_EQ(render(source, c["context"]), c["expected"].get<std::string>());
        ++rendered;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
      }
    } else {
      EXPECT_THROW(render(source, c["context"]), jinja::TemplateError);
      ++refused;
    }
  }
  EXPECT_GT(rendered, 150u);
  EXPECT_GT(refused, 10u);
}

TEST(JinjaTemplate, ErrorsNameTheLine) {
  try {
    render("a\n{% if x %}\nb\n{{ nothing.attr }}\n{% endif %}", {{"x", true}});
    FAIL() << "no error";
  } catch (const jinja::TemplateError& e) {
    EXPECT_EQ(e.line(), 4);
    EXPECT_NE(std::string(e.what()).find("'nothing' is undefined"), std::string::npos) << e.what();
  }
  try {
    render("a\n\n{% for m in ms %}\n{{ m }}\n");
    FAIL() << "no error";
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("endfor"), std::string::npos) << e.what();
  }
  try {
    render("{{ 'unclosed }}");
    FAIL() << "no error";
  } catch (const jinja::TemplateError& e) {
    EXPECT_EQ(e.line(), 1);
  }
}

// A template is data from a checkpoint folder: what would overflow the stack, run for hours or
// fill the memory is an error.
TEST(JinjaTemplate, HostileTemplatesStopWithAnError) {
  EXPECT_THROW(render("{% for i in range(1000000000) %}{% endfor %}"), jinja::TemplateError);
  EXPECT_EQ(render("{{ range(3)|list }}"), "[0, 1, 2]");
  EXPECT_THROW(render("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"),
               jinja::TemplateError);
  EXPECT_THROW(render("{{ " + std::string(100000, '-') + "1 }}"), jinja::TemplateError);
  std::string nested;
  for (int i = 0; i < 5000; ++i)
    nested += "{% if true %}";
  EXPECT_THROW(render(nested), jinja::TemplateError);
  EXPECT_THROW(render("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ 'ab' * 1000000000000 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{% set ns = namespace(x=1) %}{% for i in range(2000) %}"
                      "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"),
               jinja::TemplateError);
  // Loops in loops: stopped at the step limit (here 100000, 10 million by default).
  const jinja::Template loops("{% for i in range(100000) %}{% for j in range(100000) %}"
                              "{% endfor %}{% endfor %}");
  EXPECT_THROW(loops.render({}, 100000), jinja::TemplateError);
  EXPECT_EQ(jinja::Template("{% for i in range(300) %}{% for j in range(300) %}{% endfor %}"
                            "{% endfor %}ok")
                .render({}, 100000),
            "ok");
}

} // namespace
} // namespace mt::tok
