// The search space of a tuning run -- its schedule rules, mutators with their probabilities
// and postprocessors -- composed from four sources, in this order: the target's defaults
// (target_setup.h), the components plugins declare for targets of its kind (ABI 1.3
// joins_defaults), the fields of a tuning-config file, and command-line options. Each
// source after the first edits the list it is given: it adds (+NAME), drops (-NAME) or
// replaces the whole list. Every component of the result says where it came from, which is
// what `metatune tune --show-space` prints. Syntax and examples: docs/tuning.md.
//
// Entry syntax, one list per value, entries separated by commas (commas inside a JSON
// configuration belong to it):
//   +NAME              add NAME after the list's components (if present: keep it, see below)
//   +NAME{json}        add with a configuration (a JSON object)
//   +NAME=0.2          mutators: add with selection weight 0.2 (weights are normalised)
//   +NAME{json}=0.2
//   -NAME              drop NAME
//   NAME[{json}][=P]   an entry of a replacement list: the value's entries are the new list
// A value either replaces (plain entries only) or edits (+/- entries only). Adding a name the
// list already has reconfigures it in place: the configuration or weight given replaces the
// old one, the position stays. A mutator added without a weight takes the one its plugin
// declares, else the target's default weight for it; one with neither is an error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plugin/component_kind.h"

namespace mt {

class PluginHost;
struct TargetSetup;

enum class SpaceSource : uint8_t {
  TargetDefault,     // where: the target component ("llvm.cpu")
  PluginDeclaration, // where: the declaring plugin's library path
  Option,            // where: the option ("--rules"), or the API caller's own label
  ConfigFile,        // where: the file's path
};

struct SpaceOrigin {
  SpaceSource source = SpaceSource::Option;
  std::string where;
  // "target default (llvm.cpu)", "plugin declaration (/x/vendor.so)", "--rules",
  // "config file tune.json".
  std::string text() const;
  // "target_default", "plugin_declaration", "option", "config_file".
  const char* source_name() const;
};

// One entry of an edit, as parsed.
struct SpaceEntry {
  enum class Op : uint8_t { Add, Drop, Item }; // +NAME, -NAME, NAME (replacement list)
  Op op = Op::Item;
  std::string name;
  std::string config;                // JSON object text; empty = none given
  std::optional<double> probability; // mutators only
};

// What one source says about one list: one --rules value, or a config file's "rules" field.
struct SpaceEdit {
  ComponentKind kind = ComponentKind::ScheduleRule; // ScheduleRule, Mutator or Postproc
  SpaceOrigin origin;
  std::vector<SpaceEntry> entries;
  bool replaces() const; // true for a replacement list (also for an empty one)
};

// Parses one value in the entry syntax. Throws std::invalid_argument naming `origin` and the
// entry (bad syntax, a configuration that is not a JSON object, a weight on a rule or
// postprocessor, a weight that is not positive, a value that both replaces and edits).
SpaceEdit parse_space_edit(ComponentKind kind, std::string_view text, SpaceOrigin origin);

// The edits of a tuning-config file: a JSON object whose fields "rules", "mutators" and
// "postprocs" each hold a string in the entry syntax, or a list whose elements are such
// strings or objects {"add"|"drop"|"name": NAME, "config": {...}, "probability": P}. Other
// fields are an error (a misspelt field would otherwise be ignored silently). Throws
// std::invalid_argument naming the file.
std::vector<SpaceEdit> read_space_config_file(const std::string& path);
std::vector<SpaceEdit> parse_space_config(std::string_view json_text, const SpaceOrigin& origin);

struct SpaceComponent {
  std::string name;
  std::string config;     // JSON text; empty = the component's defaults
  double probability = 0; // mutators: selection weight (the strategy normalises the weights)
  SpaceOrigin origin;
};

// A component that one of the sources took out of the list.
struct SpaceRemoval {
  ComponentKind kind = ComponentKind::ScheduleRule;
  std::string name;
  SpaceOrigin was; // where it had come from
  SpaceOrigin by;  // the edit that dropped or replaced it
};

struct SearchSpace {
  std::string target_component;                           // "llvm.cpu"
  std::string device_kind;                                // "llvm"
  std::vector<SpaceComponent> rules, mutators, postprocs; // in order of application
  std::vector<SpaceRemoval> removed;

  std::vector<SpaceComponent>& list(ComponentKind kind);
  const std::vector<SpaceComponent>& list(ComponentKind kind) const;
};

// The target's defaults, then the plugin declarations that apply to it (in the order the
// plugins were loaded; a declared component the list already has is left as it is), then
// `edits` in order. Throws std::invalid_argument for a name no loaded plugin registers (with
// the registered names of that kind and a "did you mean"), for dropping a component the list
// does not have, and for a mutator without a weight.
SearchSpace resolve_search_space(const PluginHost& host, const TargetSetup& target,
                                 const std::vector<SpaceEdit>& edits);

// For --show-space: the lists with weights, shares and origins, and what was removed; as text
// for people, and as one JSON object.
std::string format_search_space(const SearchSpace& space);
std::string search_space_json(const SearchSpace& space);

} // namespace mt
