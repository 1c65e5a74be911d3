// A model layer's config schema (plugin ABI 1.5, components.h): checked when the plugin
// registers the layer, so that a malformed schema refuses the plugin with the reason instead of
// failing later inside a model.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mt {

// std::invalid_argument naming the field and what is wrong: not a JSON object, no "fields"
// array, a field without a string name or with an unknown type ("int", "float", "bool",
// "string", "int_list", "float_list", "layer", "layer_list"), a name twice, a push_down entry
// from a field the schema lacks or to something that is not "child.field" of a layer field, a
// "repeat" on a field that is not a layer or naming a field that is not an int.
void schema_check(const std::string& schema_json);

// A layer field of a schema: one child, a list of children (layer_list), or one child config
// repeated -- instantiated `count_field` times, each instance with parameters of its own
// ({"name": "layer", "type": "layer", "repeat": "num_layers"}: a stack of layers).
struct SchemaChildField {
  enum class Kind { Single, List, Repeated };
  std::string name;
  Kind kind = Kind::Single;
  std::string count_field; // Repeated only: the int field with the count
};

// The layer fields of a (checked) schema, in declaration order.
std::vector<SchemaChildField> schema_child_fields(const std::string& schema_json);

} // namespace mt
