// Composition of a run's search space (see space_config.h): parsing the entry syntax and
// tuning-config files, and applying plugin declarations and edits to the target's defaults.
#include "core/tuner/space_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/plugin/plugin_host.h"
#include "core/support/did_you_mean.h"
#include "core/tuner/target_setup.h"

namespace mt {

namespace {

bool composable(ComponentKind k) {
  return k == ComponentKind::ScheduleRule || k == ComponentKind::Mutator ||
         k == ComponentKind::Postproc;
}

const char* noun(ComponentKind k) {
  switch (k) {
  case ComponentKind::ScheduleRule:
    return "schedule rule";
  case ComponentKind::Mutator:
    return "mutator";
  case ComponentKind::Postproc:
    return "postprocessor";
  default:
    return to_string(k);
  }
}

std::string plural(ComponentKind k) {
  return std::string(noun(k)) + "s";
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\n\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

// Follows a scan through JSON text character by character: whether the character just seen
// belongs to a string literal (its quotes included), where braces and commas do not count.
class JsonStringTracker {
public:
  bool in_string(char c) {
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      return true;
    }
    if (c == '"') in_string_ = true;
    return in_string_;
  }

private:
  bool in_string_ = false, escaped_ = false;
};

// Splits at the commas outside braces, brackets and JSON strings: a configuration's commas
// belong to its entry.
std::vector<std::string> split_entries(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  JsonStringTracker strings;
  for (char c : text) {
    if (!strings.in_string(c)) {
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        --depth;
      } else if (c == ',' && depth == 0) {
        out.push_back(trim(cur));
        cur.clear();
        continue;
      }
    }
    cur += c;
  }
  out.push_back(trim(cur));
  // "a,,b" and a trailing comma are forgiven; an all-empty value is an empty list.
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

// The end of the JSON object starting at text[open] ('{'): the index of its closing brace.
size_t matching_brace(const std::string& text, size_t open) {
  int depth = 0;
  JsonStringTracker strings;
  for (size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (strings.in_string(c)) continue;
    if (c == '{')
      ++depth;
    else if (c == '}' && --depth == 0)
      return i;
  }
  return std::string::npos;
}

[[noreturn]] void entry_error(const SpaceOrigin& origin, const std::string& entry,
                              const std::string& why) {
  throw std::invalid_argument(origin.text() + ": '" + entry + "': " + why);
}

// A configuration must be a JSON object; stored in its compact form.
std::string checked_config(const SpaceOrigin& origin, const std::string& entry,
                           const nlohmann::json& j) {
  if (!j.is_object()) entry_error(origin, entry, "the configuration is not a JSON object");
  return j.dump();
}

void check_entry(ComponentKind kind, const SpaceOrigin& origin, const std::string& text,
                 const SpaceEntry& e) {
  if (e.name.empty()) entry_error(origin, text, "no component name");
  if (e.op == SpaceEntry::Op::Drop && (!e.config.empty() || e.probability))
    entry_error(origin, text, "-NAME drops a component and takes no configuration or weight");
  if (e.probability) {
    if (kind != ComponentKind::Mutator)
      entry_error(origin, text,
                  std::string("only mutators take a weight (=P), not a ") + noun(kind));
    if (!(*e.probability > 0) || !std::isfinite(*e.probability))
      entry_error(origin, text, "the weight must be a positive number");
  }
}

SpaceEntry parse_entry(ComponentKind kind, const std::string& text, const SpaceOrigin& origin) {
  SpaceEntry e;
  std::string rest = text;
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    e.op = rest[0] == '+' ? SpaceEntry::Op::Add : SpaceEntry::Op::Drop;
    rest = trim(rest.substr(1));
  }
  size_t end = rest.find_first_of("{= \t");
  e.name = rest.substr(0, end);
  rest = end == std::string::npos ? std::string() : trim(rest.substr(end));
  if (!rest.empty() && rest[0] == '{') {
    size_t close = matching_brace(rest, 0);
    if (close == std::string::npos)
      entry_error(origin, text, "the configuration has no closing '}'");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(rest.substr(0, close + 1));
    } catch (const std::exception& ex) {
      entry_error(origin, text, std::string("the configuration is not JSON: ") + ex.what());
    }
    e.config = checked_config(origin, text, j);
    rest = trim(rest.substr(close + 1));
  }
  if (!rest.empty() && rest[0] == '=') {
    std::string number = trim(rest.substr(1));
    char* stop = nullptr;
    double p = std::strtod(number.c_str(), &stop);
    if (number.empty() || stop != number.c_str() + number.size())
      entry_error(origin, text, "'" + number + "' is not a number (the weight after '=')");
    e.probability = p;
    rest.clear();
  }
  if (!rest.empty())
    entry_error(origin, text,
                "unexpected '" + rest + "' (entries are +NAME{json}=P, -NAME or NAME{json}=P)");
  check_entry(kind, origin, text, e);
  return e;
}

void check_not_mixed(const SpaceEdit& edit, const std::string& what) {
  bool items = false, edits = false;
  for (const auto& e : edit.entries)
    (e.op == SpaceEntry::Op::Item ? items : edits) = true;
  if (items && edits)
    throw std::invalid_argument(edit.origin.text() + ": '" + what +
                                "' both replaces the list (NAME entries) and edits it (+NAME, "
                                "-NAME entries); give one or the other");
}

// One element of a config file's list in object form.
SpaceEntry entry_from_object(ComponentKind kind, const nlohmann::json& j,
                             const SpaceOrigin& origin) {
  SpaceEntry e;
  int ops = 0;
  for (const auto& [key, value] : j.items()) {
    if (key == "add" || key == "drop" || key == "name") {
      ++ops;
      if (!value.is_string()) entry_error(origin, j.dump(), "\"" + key + "\" is not a name");
      e.name = value.get<std::string>();
      e.op = key == "add"    ? SpaceEntry::Op::Add
             : key == "drop" ? SpaceEntry::Op::Drop
                             : SpaceEntry::Op::Item;
    } else if (key == "config") {
      e.config = checked_config(origin, j.dump(), value);
    } else if (key == "probability") {
      if (!value.is_number()) entry_error(origin, j.dump(), "\"probability\" is not a number");
      e.probability = value.get<double>();
    } else {
      entry_error(origin, j.dump(),
                  "unknown field \"" + key + "\" (known: add, drop, name, config, probability)");
    }
  }
  if (ops != 1) entry_error(origin, j.dump(), "give exactly one of \"add\", \"drop\" or \"name\"");
  check_entry(kind, origin, j.dump(), e);
  return e;
}

// Applies plugin declarations and edits to a target's defaults, keeping track of where each
// component came from and what was taken out.
class SpaceResolver {
public:
  SpaceResolver(const PluginHost& host, const TargetSetup& target) : host_(host) {
    space_.target_component = target.component;
    nlohmann::json dev = nlohmann::json::parse(target.device_json, nullptr, false);
    space_.device_kind = dev.is_object() && dev.contains("kind") && dev["kind"].is_string()
                             ? dev["kind"].get<std::string>()
                             : target.component.substr(0, target.component.find('.'));
    SpaceOrigin from_target{SpaceSource::TargetDefault, target.component};
    for (const auto& n : target.rules)
      space_.rules.push_back({n, "", 0, from_target});
    for (const auto& n : target.postprocs)
      space_.postprocs.push_back({n, "", 0, from_target});
    for (size_t i = 0; i < target.mutators.size(); ++i) {
      space_.mutators.push_back({target.mutators[i], "", target.mutator_probs[i], from_target});
      target_weights_[target.mutators[i]] = target.mutator_probs[i];
    }
  }

  void add_declarations() {
    for (ComponentKind kind :
         {ComponentKind::ScheduleRule, ComponentKind::Mutator, ComponentKind::Postproc})
      for (const ComponentInfo& c : host_.components(kind)) {
        if (!c.joins_defaults ||
            !c.joins_defaults->applies_to(space_.device_kind, space_.target_component))
          continue;
        std::vector<SpaceComponent>& list = space_.list(kind);
        if (find(list, c.name) != list.end()) continue;
        list.push_back({c.name,
                        c.joins_defaults->config,
                        c.joins_defaults->probability,
                        {SpaceSource::PluginDeclaration, c.plugin_path}});
        // The one source the user did not name: say so, so that a plugin dropped into the
        // plugin directory never changes a run silently.
        spdlog::info("{} '{}' joins the search space on {}: declared by {}", noun(kind), c.name,
                     space_.target_component, c.plugin_path);
      }
  }

  void apply(const SpaceEdit& edit) {
    if (!composable(edit.kind))
      throw std::invalid_argument(edit.origin.text() + ": a " + to_string(edit.kind) +
                                  " list is not part of the search space");
    for (const SpaceEntry& e : edit.entries)
      require_registered(edit.kind, e.name, edit.origin);
    if (edit.replaces())
      replace(edit);
    else
      for (const SpaceEntry& e : edit.entries)
        e.op == SpaceEntry::Op::Drop ? drop(edit, e) : add(edit, e);
  }

  SearchSpace take() { return std::move(space_); }

private:
  using List = std::vector<SpaceComponent>;

  static List::iterator find(List& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(),
                        [&](const SpaceComponent& c) { return c.name == name; });
  }

  void require_registered(ComponentKind kind, const std::string& name,
                          const SpaceOrigin& origin) const {
    if (host_.find(kind, name)) return;
    std::vector<std::string> names;
    for (const ComponentInfo& c : host_.components(kind))
      names.push_back(c.name);
    throw std::invalid_argument(origin.text() + ": " + noun(kind) + " '" + name +
                                "' is not registered by any loaded plugin" +
                                did_you_mean(name, names) + "; registered " + plural(kind) + ": " +
                                join(names));
  }

  // The weight of a mutator entry that gives none: the one it has in `previous` (the list
  // being edited or replaced), else its plugin's declared weight, else the target's default.
  double weight_of(const SpaceEntry& e, const List& previous, const SpaceOrigin& origin) const {
    if (e.probability) return *e.probability;
    for (const SpaceComponent& c : previous)
      if (c.name == e.name) return c.probability;
    const ComponentInfo* info = host_.find(ComponentKind::Mutator, e.name);
    if (info && info->joins_defaults && info->joins_defaults->probability > 0)
      return info->joins_defaults->probability;
    if (auto it = target_weights_.find(e.name); it != target_weights_.end()) return it->second;
    throw std::invalid_argument(origin.text() + ": mutator '" + e.name +
                                "' needs a selection weight (" +
                                (e.op == SpaceEntry::Op::Add ? "+" : "") + e.name +
                                "=P): neither its plugin nor the target gives one");
  }

  void replace(const SpaceEdit& edit) {
    List& list = space_.list(edit.kind);
    List next;
    for (const SpaceEntry& e : edit.entries) {
      if (find(next, e.name) != next.end())
        throw std::invalid_argument(edit.origin.text() + ": " + noun(edit.kind) + " '" + e.name +
                                    "' is listed twice");
      double w = edit.kind == ComponentKind::Mutator ? weight_of(e, list, edit.origin) : 0;
      next.push_back({e.name, e.config, w, edit.origin});
    }
    for (const SpaceComponent& c : list)
      if (find(next, c.name) == next.end())
        space_.removed.push_back({edit.kind, c.name, c.origin, edit.origin});
    list = std::move(next);
  }

  void drop(const SpaceEdit& edit, const SpaceEntry& e) {
    List& list = space_.list(edit.kind);
    auto it = find(list, e.name);
    if (it == list.end()) {
      std::vector<std::string> names;
      for (const SpaceComponent& c : list)
        names.push_back(c.name);
      throw std::invalid_argument(edit.origin.text() + ": cannot drop " + noun(edit.kind) + " '" +
                                  e.name + "': the list does not have it (" + join(names) + ")");
    }
    space_.removed.push_back({edit.kind, e.name, it->origin, edit.origin});
    list.erase(it);
  }

  void add(const SpaceEdit& edit, const SpaceEntry& e) {
    List& list = space_.list(edit.kind);
    double w = edit.kind == ComponentKind::Mutator ? weight_of(e, list, edit.origin) : 0;
    if (auto it = find(list, e.name); it != list.end()) {
      if (!e.config.empty()) it->config = e.config;
      it->probability = w;
      it->origin = edit.origin;
      return;
    }
    list.push_back({e.name, e.config, w, edit.origin});
  }

  const PluginHost& host_;
  SearchSpace space_;
  std::map<std::string, double> target_weights_;
};

nlohmann::json config_json(const std::string& config) {
  return config.empty() ? nlohmann::json() : nlohmann::json::parse(config);
}

nlohmann::json origin_json(const SpaceOrigin& o) {
  return {{"source", o.source_name()}, {"where", o.where}, {"text", o.text()}};
}

double total_weight(const std::vector<SpaceComponent>& mutators) {
  double total = 0;
  for (const auto& m : mutators)
    total += m.probability;
  return total;
}

std::string padded(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

} // namespace

std::string SpaceOrigin::text() const {
  switch (source) {
  case SpaceSource::TargetDefault:
    return "target default (" + where + ")";
  case SpaceSource::PluginDeclaration:
    return "plugin declaration (" + where + ")";
  case SpaceSource::Option:
    return where;
  case SpaceSource::ConfigFile:
    return "config file " + where;
  }
  return where;
}

const char* SpaceOrigin::source_name() const {
  switch (source) {
  case SpaceSource::TargetDefault:
    return "target_default";
  case SpaceSource::PluginDeclaration:
    return "plugin_declaration";
  case SpaceSource::Option:
    return "option";
  case SpaceSource::ConfigFile:
    return "config_file";
  }
  return "?";
}

bool SpaceEdit::replaces() const {
  return std::all_of(entries.begin(), entries.end(),
                     [](const SpaceEntry& e) { return e.op == SpaceEntry::Op::Item; });
}

std::vector<SpaceComponent>& SearchSpace::list(ComponentKind kind) {
  return const_cast<std::vector<SpaceComponent>&>(std::as_const(*this).list(kind));
}

const std::vector<SpaceComponent>& SearchSpace::list(ComponentKind kind) const {
  switch (kind) {
  case ComponentKind::ScheduleRule:
    return rules;
  case ComponentKind::Mutator:
    return mutators;
  case ComponentKind::Postproc:
    return postprocs;
  default:
    throw std::invalid_argument(std::string("a search space has no ") + to_string(kind) + " list");
  }
}

SpaceEdit parse_space_edit(ComponentKind kind, std::string_view text, SpaceOrigin origin) {
  SpaceEdit edit{kind, std::move(origin), {}};
  for (const std::string& entry : split_entries(text))
    edit.entries.push_back(parse_entry(kind, entry, edit.origin));
  check_not_mixed(edit, std::string(text));
  return edit;
}

std::vector<SpaceEdit> parse_space_config(std::string_view json_text, const SpaceOrigin& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    throw std::invalid_argument(origin.text() + ": not JSON: " + e.what());
  }
  if (!j.is_object())
    throw std::invalid_argument(origin.text() +
                                ": not a JSON object ({\"rules\": [...], \"mutators\": [...], "
                                "\"postprocs\": [...]})");
  static const std::vector<std::pair<std::string, ComponentKind>> fields = {
      {"rules", ComponentKind::ScheduleRule},
      {"mutators", ComponentKind::Mutator},
      {"postprocs", ComponentKind::Postproc}};
  for (const auto& [key, value] : j.items())
    if (std::none_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == key; }))
      throw std::invalid_argument(origin.text() + ": unknown field \"" + key +
                                  "\" (known: rules, mutators, postprocs)");
  std::vector<SpaceEdit> edits;
  for (const auto& [key, kind] : fields) {
    if (!j.contains(key)) continue;
    const nlohmann::json& value = j[key];
    SpaceOrigin where{origin.source, origin.where + " (\"" + key + "\")"};
    if (value.is_string()) {
      edits.push_back(parse_space_edit(kind, value.get<std::string>(), where));
      continue;
    }
    if (!value.is_array())
      throw std::invalid_argument(where.text() + ": neither a string nor a list of entries");
    SpaceEdit edit{kind, where, {}};
    for (const nlohmann::json& element : value) {
      if (element.is_string()) {
        SpaceEdit part = parse_space_edit(kind, element.get<std::string>(), where);
        edit.entries.insert(edit.entries.end(), part.entries.begin(), part.entries.end());
      } else if (element.is_object()) {
        edit.entries.push_back(entry_from_object(kind, element, where));
      } else {
        throw std::invalid_argument(where.text() + ": " + element.dump() +
                                    " is neither an entry string nor an entry object");
      }
    }
    check_not_mixed(edit, value.dump());
    edits.push_back(std::move(edit));
  }
  return edits;
}

std::vector<SpaceEdit> read_space_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("tuning-config file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_space_config(ss.str(), {SpaceSource::ConfigFile, path});
}

SearchSpace resolve_search_space(const PluginHost& host, const TargetSetup& target,
                                 const std::vector<SpaceEdit>& edits) {
  SpaceResolver r(host, target);
  r.add_declarations();
  for (const SpaceEdit& e : edits)
    r.apply(e);
  return r.take();
}

std::string format_search_space(const SearchSpace& space) {
  std::ostringstream out;
  out << "search space on " << space.target_component << " (device kind " << space.device_kind
      << ")\n";
  auto name_of = [](const SpaceComponent& c) {
    return c.config.empty() ? c.name : c.name + " " + c.config;
  };
  size_t width = 0;
  for (ComponentKind k :
       {ComponentKind::ScheduleRule, ComponentKind::Mutator, ComponentKind::Postproc})
    for (const SpaceComponent& c : space.list(k))
      width = std::max(width, name_of(c).size());
  width += 2;
  auto section = [&](ComponentKind kind, const char* title) {
    const auto& list = space.list(kind);
    out << "\n" << title << (list.empty() ? ": none\n" : ":\n");
    double total = total_weight(list);
    for (const SpaceComponent& c : list) {
      out << "  " << padded(name_of(c), width);
      if (kind == ComponentKind::Mutator) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%-8g %5.1f%%  ", c.probability,
                      total > 0 ? 100 * c.probability / total : 0.0);
        out << buf;
      }
      out << c.origin.text() << "\n";
    }
  };
  section(ComponentKind::ScheduleRule, "schedule rules, in order of application");
  section(ComponentKind::Mutator, "mutators: selection weight, share, origin");
  section(ComponentKind::Postproc, "postprocessors, in order of application");
  if (!space.removed.empty()) {
    out << "\nremoved:\n";
    for (const SpaceRemoval& r : space.removed)
      out << "  " << noun(r.kind) << " " << r.name << " (" << r.was.text() << ") by " << r.by.text()
          << "\n";
  }
  return out.str();
}

std::string search_space_json(const SearchSpace& space) {
  nlohmann::json j;
  j["target_component"] = space.target_component;
  j["device_kind"] = space.device_kind;
  auto list = [&](ComponentKind kind) {
    nlohmann::json a = nlohmann::json::array();
    double total = total_weight(space.list(kind));
    for (const SpaceComponent& c : space.list(kind)) {
      nlohmann::json e = {{"name", c.name}, {"config", config_json(c.config)}};
      if (kind == ComponentKind::Mutator) {
        e["probability"] = c.probability;
        e["share"] = total > 0 ? c.probability / total : 0.0;
      }
      e["origin"] = origin_json(c.origin);
      a.push_back(std::move(e));
    }
    return a;
  };
  j["rules"] = list(ComponentKind::ScheduleRule);
  j["mutators"] = list(ComponentKind::Mutator);
  j["postprocs"] = list(ComponentKind::Postproc);
  j["removed"] = nlohmann::json::array();
  for (const SpaceRemoval& r : space.removed)
    j["removed"].push_back({{"kind", to_string(r.kind)},
                            {"name", r.name},
                            {"was", origin_json(r.was)},
                            {"by", origin_json(r.by)}});
  return j.dump();
}

} // namespace mt
