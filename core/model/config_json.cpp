// Configs to and from JSON, and JSON overrides (see config_json.h and Config::apply_json).
#include "core/model/config_json.h"

#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/model/config_path.h"
#include "core/model/dimension_push_down.h"

namespace mt {

namespace {

// Document order, so that overrides apply in the order they are written.
using json = nlohmann::ordered_json;

// ---- writing ----

std::string float_text(double d) {
  return json(d).dump();
}

class JsonWriter {
public:
  std::string write(const Config& c) {
    config(c, 0);
    out_ << "\n";
    return out_.str();
  }

private:
  void indent(int level) { out_ << std::string(static_cast<size_t>(level) * 2, ' '); }

  void config(const Config& c, int level) {
    out_ << "{\n";
    indent(level + 1);
    out_ << "\"kind\": " << json(c.kind()).dump();
    const std::vector<FieldSpec>& fields = c.schema().fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      out_ << ",\n";
      indent(level + 1);
      out_ << json(fields[i].name).dump() << ": ";
      value(c.field_value(i), level + 1);
    }
    out_ << "\n";
    indent(level);
    out_ << "}";
  }

  template <typename T, typename F> void inline_list(const std::vector<T>& list, F&& text) {
    out_ << "[";
    for (size_t i = 0; i < list.size(); ++i)
      out_ << (i ? ", " : "") << text(list[i]);
    out_ << "]";
  }

  void value(const ConfigValue& v, int level) {
    if (!v.is_set()) {
      out_ << "null";
    } else if (const int64_t* i = v.as_int()) {
      out_ << *i;
    } else if (const double* d = v.as_float()) {
      out_ << float_text(*d);
    } else if (const bool* b = v.as_bool()) {
      out_ << (*b ? "true" : "false");
    } else if (const std::string* s = v.as_string()) {
      out_ << json(*s).dump();
    } else if (const auto* ints = v.as_int_list()) {
      inline_list(*ints, [](int64_t x) { return std::to_string(x); });
    } else if (const auto* floats = v.as_float_list()) {
      inline_list(*floats, float_text);
    } else if (const Config* c = v.as_child()) {
      config(*c, level);
    } else if (const auto* list = v.as_child_list()) {
      if (list->empty()) {
        out_ << "[]";
        return;
      }
      out_ << "[\n";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out_ << ",\n";
        indent(level + 1);
        config((*list)[k], level + 1);
      }
      out_ << "\n";
      indent(level);
      out_ << "]";
    }
  }

  std::ostringstream out_;
};

// ---- reading ----

std::string where(const std::string& path) {
  return path.empty() ? "(root)" : path;
}

// How a JSON value is described in an error: its type and, when short, itself.
std::string describe(const json& j) {
  std::string type = j.is_number_integer() ? "int"
                     : j.is_number_float() ? "float"
                     : j.is_boolean()      ? "bool"
                                           : j.type_name();
  if (j.is_object() || j.is_array() || j.is_null()) return type;
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return type + " " + text;
}

// The parse_error text without nlohmann's "[json.exception.parse_error.101] " tag.
std::string parse_message(const json::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m[0] == '[') {
    size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

// Configs nested deeper than this are rejected, so that no input can exhaust the stack.
constexpr int kMaxDepth = 200;

class JsonReader {
public:
  JsonReader(const ConfigRegistry* registry, std::string source)
      : registry_(registry), source_(source.empty() ? "config JSON" : std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw ConfigError(source_ + ": at '" + where(path) + "': " + why);
  }

  json parse(std::string_view text) const {
    try {
      return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
      throw ConfigError(source_ + ": malformed JSON: " + parse_message(e));
    }
  }

  Config config(const json& j, const std::string& path, int depth) const {
    if (depth > kMaxDepth) fail(path, "configs nested deeper than " + std::to_string(kMaxDepth));
    if (!j.is_object()) fail(path, "expected a config object, given " + describe(j));
    auto kind = j.find("kind");
    if (kind == j.end()) fail(path, "config object without \"kind\"");
    if (!kind->is_string()) fail(path, "\"kind\" must be a string, given " + describe(*kind));
    if (!registry_) fail(path, "a config with a \"kind\" needs a config registry to be read");
    Config c;
    try {
      c = registry_->make(kind->get<std::string>());
    } catch (const ConfigError& e) {
      fail(path, e.what());
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "kind") continue;
      std::optional<size_t> f = c.schema().find(it.key());
      std::string p = join_config_path(path, it.key());
      if (!f) fail(p, c.schema().unknown_field_message(it.key()));
      set(c, *f, value(c.schema().at(*f).type, it.value(), p, depth), p);
    }
    return c;
  }

  // A JSON value as a value of a field of `type` at `path`.
  ConfigValue value(FieldType type, const json& j, const std::string& path, int depth) const {
    if (j.is_null()) return ConfigValue();
    auto mistyped = [&](const json& given, const std::string& at) {
      fail(at, std::string("expected ") + field_type_name(type) + ", given " + describe(given));
    };
    switch (type) {
    case FieldType::Int:
      return ConfigValue(integer(j, path, mistyped));
    case FieldType::Float:
      if (!j.is_number()) mistyped(j, path);
      return ConfigValue(j.get<double>());
    case FieldType::Bool:
      if (!j.is_boolean()) mistyped(j, path);
      return ConfigValue(j.get<bool>());
    case FieldType::String:
      if (!j.is_string()) mistyped(j, path);
      return ConfigValue(j.get<std::string>());
    case FieldType::IntList: {
      if (!j.is_array()) mistyped(j, path);
      auto element_mistyped = [&](const json& given, const std::string& at) {
        fail(at, "expected int, given " + describe(given));
      };
      std::vector<int64_t> out;
      for (size_t i = 0; i < j.size(); ++i)
        out.push_back(integer(j[i], index_config_path(path, i), element_mistyped));
      return ConfigValue(std::move(out));
    }
    case FieldType::FloatList: {
      if (!j.is_array()) mistyped(j, path);
      std::vector<double> out;
      for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_number())
          fail(index_config_path(path, i), "expected float, given " + describe(j[i]));
        out.push_back(j[i].get<double>());
      }
      return ConfigValue(std::move(out));
    }
    case FieldType::Child:
      return ConfigValue(config(j, path, depth + 1));
    case FieldType::ChildList: {
      if (!j.is_array()) mistyped(j, path);
      std::vector<Config> out;
      for (size_t i = 0; i < j.size(); ++i)
        out.push_back(config(j[i], index_config_path(path, i), depth + 1));
      return ConfigValue(std::move(out));
    }
    }
    fail(path, "field of an unknown type");
  }

  // set_field with errors located in the source.
  void set(Config& c, size_t field, ConfigValue v, const std::string& path) const {
    try {
      c.set_field(field, std::move(v), ValueOrigin::Set, path);
    } catch (const ConfigError& e) {
      fail(path, e.what());
    }
  }

  const std::string& source() const { return source_; }

private:
  template <typename F>
  int64_t integer(const json& j, const std::string& path, const F& mistyped) const {
    if (j.is_number_unsigned()) {
      if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(path, "integer " + j.dump() + " is out of range (int64)");
      return static_cast<int64_t>(j.get<uint64_t>());
    }
    if (!j.is_number_integer()) mistyped(j, path);
    return j.get<int64_t>();
  }

  const ConfigRegistry* registry_;
  std::string source_;
};

// ---- overrides ----

// Applies one override: the JSON value `j` to the field at `path` of `root`.
// A Config error message without its "set 'path': " opening, which the override's location
// replaces.
std::string without_operation(const std::string& message, const std::string& path) {
  for (const char* op : {"spec", "set", "clear", "is_set"}) {
    std::string opening = std::string(op) + " '" + path + "': ";
    if (message.compare(0, opening.size(), opening) == 0) return message.substr(opening.size());
  }
  return message;
}

void apply_override(Config& root, const std::string& path, const json& j, const JsonReader& reader,
                    int depth) {
  if (depth > kMaxDepth)
    reader.fail(path, "overrides nested deeper than " + std::to_string(kMaxDepth));
  auto located = [&](auto&& edit) {
    try {
      edit();
    } catch (const ConfigError& e) {
      reader.fail(path, without_operation(e.what(), path));
    }
  };
  FieldSpec spec;
  located([&] { spec = root.spec(path); });
  bool element = !path.empty() && path.back() == ']';
  if ((spec.type == FieldType::Child || element) && j.is_object() && !j.contains("kind")) {
    // Edits of the child in place: its keys are paths below it.
    bool set = false;
    located([&] { set = root.is_set(path); });
    if (!set) reader.fail(path, "the child is unset: give a whole config with \"kind\"");
    for (auto it = j.begin(); it != j.end(); ++it)
      apply_override(root, path + "." + it.key(), it.value(), reader, depth + 1);
    return;
  }
  if (j.is_null()) {
    located([&] { root.clear(path); });
    return;
  }
  ConfigValue v = reader.value(element ? FieldType::Child : spec.type, j, path, depth);
  located([&] { root.set(path, std::move(v)); });
}

void apply_overrides(Config& root, const json& j, const JsonReader& reader) {
  if (!j.is_object())
    reader.fail("", "overrides must be a JSON object of path: value, given " + describe(j));
  for (auto it = j.begin(); it != j.end(); ++it)
    apply_override(root, it.key(), it.value(), reader, 0);
}

} // namespace

std::string config_to_json(const Config& config) {
  if (config.empty()) throw ConfigError("config_to_json: an empty config (no kind)");
  return JsonWriter().write(config);
}

Config config_from_json(const ConfigRegistry& registry, std::string_view text,
                        const std::string& source) {
  JsonReader reader(&registry, source);
  Config c = reader.config(reader.parse(text), "", 0);
  adopt_pushed_values(c);
  return c;
}

Config load_config_file(const ConfigRegistry& registry, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read config file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file '" + path + "'");
  return config_from_json(registry, text.str(), path);
}

void save_config_file(const Config& config, const std::string& path) {
  std::string text = config_to_json(config);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ConfigError("cannot write config file '" + path + "'");
  out << text;
  out.close();
  if (!out) throw ConfigError("cannot write config file '" + path + "'");
}

Config& Config::apply_json(std::string_view overrides, const ConfigRegistry* registry) {
  require_kind("apply_json");
  JsonReader reader(registry, "overrides");
  apply_overrides(*this, reader.parse(overrides), reader);
  return *this;
}

Config& Config::apply_assignments(const std::vector<std::string>& assignments,
                                  const ConfigRegistry* registry) {
  require_kind("apply_assignments");
  JsonReader reader(registry, "overrides");
  for (const std::string& a : assignments) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("override '" + a + "': expected path=value");
    std::string path = a.substr(0, eq), text = a.substr(eq + 1);
    json j;
    bool is_json = json::accept(text);
    if (is_json) j = json::parse(text);
    // A string field takes the text as it is unless it is a quoted JSON string, so that
    // "activation=gelu" and "name=123" both mean what they say.
    bool string_field = false;
    try {
      string_field = spec(path).type == FieldType::String;
    } catch (const ConfigError& e) {
      reader.fail(path, e.what());
    }
    if (!is_json || (string_field && !j.is_string())) j = text;
    apply_override(*this, path, j, reader, 0);
  }
  return *this;
}

Config Config::clone_json(std::string_view overrides, const ConfigRegistry* registry) const {
  Config copy = *this;
  copy.apply_json(overrides, registry);
  return copy;
}

Config Config::clone_assignments(const std::vector<std::string>& assignments,
                                 const ConfigRegistry* registry) const {
  Config copy = *this;
  copy.apply_assignments(assignments, registry);
  return copy;
}

} // namespace mt
