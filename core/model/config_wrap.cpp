// Wrapping a child of every config of a kind (see config_wrap.h).
#include "core/model/config_wrap.h"

#include <optional>

namespace mt {

namespace {

// That `schema` has a child field `name`; a ConfigError naming both otherwise.
void require_child_field(const ConfigSchema& schema, const std::string& name, const char* role) {
  std::optional<size_t> i = schema.find(name);
  if (!i) throw ConfigError(std::string(role) + ": " + schema.unknown_field_message(name));
  if (schema.at(*i).type != FieldType::Child)
    throw ConfigError(std::string(role) + ": field '" + name + "' of kind '" + schema.kind() +
                      "' is of type " + field_type_name(schema.at(*i).type) +
                      ", not a child config");
}

} // namespace

int wrap_child_everywhere(Config& root, const ConfigRegistry& reg, const std::string& kind,
                          const std::string& field, const Config& wrapper,
                          const std::string& inner_field) {
  require_child_field(reg.schema(kind), field, "the field to wrap");
  if (wrapper.empty()) throw ConfigError("the wrapper is an empty config (no kind)");
  require_child_field(wrapper.schema(), inner_field, "the wrapper's inner field");
  int wrapped = 0;
  root.replace_kind(kind, [&](const Config& c) {
    if (!c.is_set(field) || c.get<Config>(field).kind() == wrapper.kind()) return c;
    Config w = wrapper;
    w.set(inner_field, c.get<Config>(field));
    Config out = c;
    out.set(field, std::move(w));
    ++wrapped;
    return out;
  });
  return wrapped;
}

} // namespace mt
