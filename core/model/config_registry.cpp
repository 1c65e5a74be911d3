// The registry of config kinds (see config_registry.h).
#include "core/model/config_registry.h"

#include <algorithm>

#include "core/support/did_you_mean.h"

namespace mt {

void ConfigRegistry::add(ConfigSchema schema) {
  schema.check();
  std::string kind = schema.kind();
  if (schemas_.count(kind)) throw ConfigError("config kind '" + kind + "' is already registered");
  schemas_.emplace(kind, std::make_shared<const ConfigSchema>(std::move(schema)));
}

bool ConfigRegistry::contains(const std::string& kind) const {
  return schemas_.count(kind) != 0;
}

std::shared_ptr<const ConfigSchema> ConfigRegistry::schema_ptr(const std::string& kind) const {
  auto it = schemas_.find(kind);
  if (it != schemas_.end()) return it->second;
  std::vector<std::string> known = kinds();
  std::string list;
  for (const std::string& k : known)
    list += (list.empty() ? "" : ", ") + k;
  throw ConfigError("unknown config kind '" + kind + "'" + did_you_mean(kind, known) +
                    (unknown_kind_note_.empty() ? "" : ": " + unknown_kind_note_) +
                    "; known kinds: " + (list.empty() ? "(none)" : list));
}

const ConfigSchema& ConfigRegistry::schema(const std::string& kind) const {
  return *schema_ptr(kind);
}

std::vector<std::string> ConfigRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, s] : schemas_)
    out.push_back(k);
  return out;
}

Config ConfigRegistry::make(const std::string& kind) const {
  std::vector<std::string> making;
  return make(kind, making);
}

// `making` holds "Kind.field" of each default child being made, outermost first, to name the
// chain that asks for an unknown kind or loops.
Config ConfigRegistry::make(const std::string& kind, std::vector<std::string>& making) const {
  Config c(schema_ptr(kind));
  const std::vector<FieldSpec>& fields = c.schema().fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& child_kind = fields[i].default_kind;
    if (child_kind.empty()) continue;
    making.push_back(kind + "." + fields[i].name);
    auto chain = [&] {
      std::string s;
      for (const std::string& m : making)
        s += (s.empty() ? "" : " -> ") + m;
      return s;
    };
    bool loops = std::any_of(making.begin(), making.end(), [&](const std::string& m) {
      return m.compare(0, child_kind.size() + 1, child_kind + ".") == 0;
    });
    if (loops || child_kind == kind)
      throw ConfigError("config kind '" + child_kind + "' contains itself by default (" + chain() +
                        " -> " + child_kind + ")");
    Config child;
    try {
      child = make(child_kind, making);
    } catch (const ConfigError& e) {
      if (!contains(child_kind)) throw ConfigError("default kind of " + chain() + ": " + e.what());
      throw;
    }
    c.set_field(i, std::move(child), ValueOrigin::Default, fields[i].name);
    making.pop_back();
  }
  return c;
}

} // namespace mt
