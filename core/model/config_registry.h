// The config kinds known to a process, by name: the schemas that the layer library and the
// plugins declare. make() builds a config with every field at its default, children included.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model/config.h"
#include "core/model/config_schema.h"

namespace mt {

class ConfigRegistry {
public:
  // Adds a kind. A kind already registered or a schema that fails ConfigSchema::check() throws
  // ConfigError. A child's default kind need not be registered yet (plugins load in any
  // order); make() reports one that is still missing.
  void add(ConfigSchema schema);

  bool contains(const std::string& kind) const;
  // Why a kind may be missing, said after the kind in the error of an unknown one (the layer
  // registry: that no loaded plugin provides it, and how to add one).
  void set_unknown_kind_note(std::string note) { unknown_kind_note_ = std::move(note); }
  // Unknown kinds throw ConfigError with a "did you mean", the note, and the registered kinds.
  const ConfigSchema& schema(const std::string& kind) const;
  std::shared_ptr<const ConfigSchema> schema_ptr(const std::string& kind) const;
  std::vector<std::string> kinds() const; // sorted

  // A config of `kind` with every field at its default; a child field with a default kind
  // holds a config made the same way. Throws ConfigError for an unknown kind (also a default
  // kind of some child, named with the field that asks for it) and for default kinds that
  // contain themselves (A.b defaults to B, B.a to A).
  Config make(const std::string& kind) const;

private:
  Config make(const std::string& kind, std::vector<std::string>& making) const;

  std::map<std::string, std::shared_ptr<const ConfigSchema>> schemas_;
  std::string unknown_kind_note_;
};

} // namespace mt
