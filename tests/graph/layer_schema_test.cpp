// Layer schemas (core/plugin/layer_schema.h): what the host refuses when a plugin registers a
// model layer, and the child fields it reads from a good one.
#include <gtest/gtest.h>

#include <string>

#include "core/plugin/layer_schema.h"

namespace mt {
namespace {

std::string refusal(const std::string& schema) {
  try {
    schema_check(schema);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(LayerSchema, MalformedSchemasAreRefusedWithTheReason) {
  EXPECT_EQ(refusal("[1]"), "not a JSON object");
  EXPECT_EQ(refusal("{\"doc\": 1"), "not a JSON object");
  EXPECT_EQ(refusal("{}"), "no \"fields\" array");
  EXPECT_EQ(refusal(R"({"fields": [{"type": "int"}]})"), "field 0: no string \"name\"");
  EXPECT_NE(refusal(R"({"fields": [{"name": "a", "type": "integer"}]})")
                .find("field 0 ('a'): \"type\" must be one of"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]})"),
            "field 1 ('a'): declared twice");
  EXPECT_NE(refusal(R"({"fields": [{"name": "a.b", "type": "int"}]})").find("without '.'"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"fields": [{"name": "d", "type": "int"}],
                        "push_down": {"e": ["x.d"]}})"),
            "push_down from 'e': no such field");
  EXPECT_EQ(refusal(R"({"fields": [{"name": "d", "type": "int"}, {"name": "c", "type": "int"}],
                        "push_down": {"d": ["c.d"]}})"),
            "push_down 'd' -> 'c.d': not \"child.field\" of a layer field");
  EXPECT_EQ(refusal(R"({"fields": [{"name": "n", "type": "string"},
                                   {"name": "l", "type": "layer", "repeat": "n"}]})"),
            "field 'l': \"repeat\" must name an int field of the schema");
  EXPECT_EQ(refusal(R"({"fields": [{"name": "d", "type": "int", "required": "yes"}]})"),
            "field 0 ('d'): \"required\" is not a boolean");
}

TEST(LayerSchema, ChildFieldsOfAGoodSchema) {
  std::string s = R"({"fields": [
      {"name": "d", "type": "int", "required": true},
      {"name": "n", "type": "int"},
      {"name": "norm", "type": "layer"},
      {"name": "blocks", "type": "layer_list"},
      {"name": "layer", "type": "layer", "repeat": "n"}],
    "push_down": {"d": ["norm.d", "layer.d", "blocks.d"]}})";
  EXPECT_EQ(refusal(s), "");
  auto c = schema_child_fields(s);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "norm");
  EXPECT_EQ(c[0].kind, SchemaChildField::Kind::Single);
  EXPECT_EQ(c[1].kind, SchemaChildField::Kind::List);
  EXPECT_EQ(c[2].kind, SchemaChildField::Kind::Repeated);
  EXPECT_EQ(c[2].count_field, "n");
}

} // namespace
} // namespace mt
