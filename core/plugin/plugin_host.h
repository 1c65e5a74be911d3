// The plugin host: finds plugin libraries, checks them without loading (Boost.DLL
// library_info: the entry symbol, or the marker section that survives `strip`), loads them,
// negotiates the ABI version, and keeps a registry of their components by kind and name.
// A plugin that cannot be used is refused -- with its path and the reason recorded and
// logged -- and the host carries on with the others.
//
// Search path, in order: the entries of METATUNE_PLUGIN_PATH (colon-separated), then
// <directory of the metatune plugin-host library>/metatune/plugins, which is lib/metatune/plugins
// in the install tree and build/lib/metatune/plugins in the build tree. The first plugin to
// register a name wins; a later one with the same name is refused.
//
// Threads: load and discover from one thread. Once loading is done, create_* and the
// instances may be used from several threads, each instance by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plugin/component_kind.h"
#include "core/plugin/plugin_components.h"

namespace mt {

inline constexpr const char* kPluginPathEnv = "METATUNE_PLUGIN_PATH";

enum class RefusalReason : uint8_t {
  None,               // loaded
  NotSharedLibrary,   // not a (native) shared library at all
  NotAPlugin,         // no entry symbol and no marker section, or marker without entry
  LoadFailed,         // dlopen failed (missing dependency, undefined symbol, ...)
  WrongMajor,         // built for another major ABI version
  NewerMinor,         // needs a newer minor ABI version than this host provides
  InitFailed,         // the entry point returned a failure
  InvalidAnswer,      // the entry point's answer is malformed (no version, bad descriptor)
  DuplicateComponent, // a component name is already taken
};
const char* to_string(RefusalReason r);

struct PluginRecord {
  std::string path;
  RefusalReason refusal = RefusalReason::None;
  std::string message;      // why it was refused: "<path>: <reason>"; empty when loaded
  uint32_t abi_version = 0; // the plugin's (major << 16 | minor); 0 if it never said
  std::string name, version, description;
  std::vector<ComponentInfo> components; // registered (loaded plugins only)

  bool loaded() const { return refusal == RefusalReason::None; }
  std::string abi_version_string() const; // "1.0", or "?" if unknown
};

class PluginHost {
public:
  PluginHost();
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // METATUNE_PLUGIN_PATH entries, then the plugin directory next to this library.
  static std::vector<std::filesystem::path> default_search_path();
  // Splits a colon-separated list, dropping empty entries.
  static std::vector<std::filesystem::path> parse_search_path(std::string_view list);
  // The plugin directory of this installation / build tree.
  static std::filesystem::path builtin_plugin_dir();

  // Loads every plugin found in `dirs` (non-recursive, in file-name order; missing
  // directories are skipped). Returns the number of plugins newly loaded.
  size_t discover(const std::vector<std::filesystem::path>& dirs);
  size_t discover() { return discover(default_search_path()); }
  // Loads one file (a file already seen returns its existing record).
  const PluginRecord& load(const std::filesystem::path& file);

  // Every plugin seen, loaded or refused, in the order seen.
  const std::vector<PluginRecord>& plugins() const;
  std::vector<const PluginRecord*> refused() const;
  std::vector<ComponentInfo> components() const;
  std::vector<ComponentInfo> components(ComponentKind kind) const;
  const ComponentInfo* find(ComponentKind kind, std::string_view name) const;

  // New instances (config: JSON text, empty = defaults). Throw std::out_of_range for an
  // unknown name, PluginError if the plugin's factory fails.
  std::unique_ptr<PluginScheduleRule> create_schedule_rule(std::string_view name,
                                                           std::string_view config = {}) const;
  std::unique_ptr<PluginMutator> create_mutator(std::string_view name,
                                                std::string_view config = {}) const;
  std::unique_ptr<PluginPostproc> create_postproc(std::string_view name,
                                                  std::string_view config = {}) const;
  std::unique_ptr<PluginCostModel> create_cost_model(std::string_view name,
                                                     std::string_view config = {}) const;
  std::unique_ptr<PluginSearchStrategy> create_search_strategy(std::string_view name,
                                                               std::string_view config = {}) const;
  std::unique_ptr<PluginTarget> create_target(std::string_view name,
                                              std::string_view config = {}) const;
  std::unique_ptr<PluginLayer> create_layer(std::string_view name,
                                            std::string_view config = {}) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace mt
