// Walks over a whole config tree: visit() and the recursive replace (see config.h).
#include "core/model/config.h"
#include "core/model/config_path.h"

namespace mt {

namespace {

void visit_node(const Config& c, const std::string& path, const Config::Visitor& enter,
                const Config::Visitor& exit) {
  if (enter) enter(path, c);
  const std::vector<FieldSpec>& fields = c.schema().fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string p = join_config_path(path, fields[i].name);
    const ConfigValue& v = c.field_value(i);
    if (const Config* child = v.as_child()) visit_node(*child, p, enter, exit);
    if (const std::vector<Config>* list = v.as_child_list())
      for (size_t k = 0; k < list->size(); ++k)
        visit_node((*list)[k], index_config_path(p, k), enter, exit);
  }
  if (exit) exit(path, c);
}

// Bottom-up: a node's children first, then the node; a replacement is not searched.
int replace_node(Config& c, const std::string& path, const Config::Matcher& match,
                 const Config::Replacer& replace) {
  int count = 0;
  const std::vector<FieldSpec>& fields = c.schema().fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string p = join_config_path(path, fields[i].name);
    if (Config* child = c.field_child(i)) count += replace_node(*child, p, match, replace);
    if (std::vector<Config>* list = c.field_child_list(i))
      for (size_t k = 0; k < list->size(); ++k)
        count += replace_node((*list)[k], index_config_path(p, k), match, replace);
  }
  if (!match(path, c)) return count;
  Config replacement = replace(c);
  if (replacement.empty())
    throw ConfigError("replace at '" + (path.empty() ? std::string("(root)") : path) + "' (" +
                      c.kind() + "): the replacement is an empty config (no kind)");
  c = std::move(replacement);
  return count + 1;
}

} // namespace

void Config::visit(const Visitor& enter, const Visitor& exit) const {
  require_kind("visit");
  visit_node(*this, "", enter, exit);
}

int Config::replace_if(const Matcher& match, const Replacer& replace) {
  require_kind("replace");
  // On a copy, so that a replacer that throws leaves this config as it was.
  Config copy = *this;
  int count = replace_node(copy, "", match, replace);
  *this = std::move(copy);
  return count;
}

int Config::replace_kind(const std::string& kind, const Replacer& replace) {
  return replace_if([&](const std::string&, const Config& c) { return c.kind() == kind; }, replace);
}

} // namespace mt
