#include "core/plugin/plugin_host.h"

#include <boost/dll/library_info.hpp>
#include <boost/dll/runtime_symbol_info.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "core/plugin/host_api.h"
#include "core/plugin/last_error.h"
#include "core/plugin/layer_schema.h"
#include "core/plugin/loaded_plugin.h"

namespace fs = std::filesystem;

namespace mt {

namespace plugin_detail {

LoadedPlugin::~LoadedPlugin() {
  if (!unload) return;
  try {
    unload();
  } catch (...) { // an unload hook that throws must not take the host down
  }
}

} // namespace plugin_detail

const char* to_string(RefusalReason r) {
  switch (r) {
  case RefusalReason::None:
    return "loaded";
  case RefusalReason::NotSharedLibrary:
    return "not a shared library";
  case RefusalReason::NotAPlugin:
    return "no entry symbol";
  case RefusalReason::LoadFailed:
    return "load failed";
  case RefusalReason::WrongMajor:
    return "wrong major ABI version";
  case RefusalReason::NewerMinor:
    return "newer minor ABI version";
  case RefusalReason::InitFailed:
    return "failing init";
  case RefusalReason::InvalidAnswer:
    return "invalid answer";
  case RefusalReason::DuplicateComponent:
    return "duplicate component name";
  }
  return "?";
}

std::string PluginRecord::abi_version_string() const {
  if (abi_version == 0) return "?";
  return std::to_string(MT_ABI_VERSION_MAJOR(abi_version)) + "." +
         std::to_string(MT_ABI_VERSION_MINOR(abi_version));
}

namespace {

using plugin_detail::LoadedPlugin;
using plugin_detail::Registration;

std::string version_string(uint32_t v) {
  return std::to_string(MT_ABI_VERSION_MAJOR(v)) + "." + std::to_string(MT_ABI_VERSION_MINOR(v));
}

std::string copy_c_string(const char* s) {
  return s ? std::string(s) : std::string();
}

// Checks the ELF header ourselves: Boost.DLL accepts any ELF file (executables, objects),
// while only ET_DYN files can be plugins. Returns an empty string if `path` looks like a
// shared library, else why not.
std::string elf_problem(const fs::path& path) {
#if defined(__linux__)
  std::ifstream f(path, std::ios::binary);
  unsigned char h[18] = {};
  if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return "not a shared library (too short)";
  if (!(h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F'))
    return "not a shared library (no ELF header)";
  unsigned type = h[5] == 2 ? (h[16] << 8 | h[17]) : (h[17] << 8 | h[16]);
  constexpr unsigned kElfSharedObject = 3; // ET_DYN
  if (type != kElfSharedObject)
    return "an ELF file but not a shared library (e_type " + std::to_string(type) + ")";
#else
  (void)path;
#endif
  return {};
}

// Every required function of a component's table, checked once at registration so that
// later calls need no null checks.
std::string table_problem(const mt_component_desc& d) {
  auto check = [](const auto* vt, bool complete) -> std::string {
    if (!vt) return "no function table";
    if (vt->struct_size < sizeof(uint32_t) * 2 + sizeof(void*)) return "function table too small";
    if (!vt->release) return "function table has no release";
    if (!complete) return "function table is missing a required function";
    return {};
  };
  switch (d.kind) {
  case MT_COMPONENT_SCHEDULE_RULE: {
    auto* vt = d.vtable.schedule_rule;
    return check(vt, vt && MT_HAS_FIELD(vt, mt_schedule_rule_vtable, apply) && vt->apply);
  }
  case MT_COMPONENT_MUTATOR: {
    auto* vt = d.vtable.mutator;
    return check(vt, vt && MT_HAS_FIELD(vt, mt_mutator_vtable, apply) && vt->apply);
  }
  case MT_COMPONENT_POSTPROC: {
    auto* vt = d.vtable.postproc;
    return check(vt, vt && MT_HAS_FIELD(vt, mt_postproc_vtable, apply) && vt->apply);
  }
  case MT_COMPONENT_COST_MODEL: {
    auto* vt = d.vtable.cost_model;
    return check(vt,
                 vt && MT_HAS_FIELD(vt, mt_cost_model_vtable, update) && vt->predict && vt->update);
  }
  case MT_COMPONENT_SEARCH_STRATEGY: {
    auto* vt = d.vtable.search_strategy;
    // Version 1 (generate/notify on bare design spaces) or 1.3 (a search context).
    bool v1 =
        vt && MT_HAS_FIELD(vt, mt_search_strategy_vtable, notify) && vt->generate && vt->notify;
    bool v1_3 = vt && MT_HAS_FIELD(vt, mt_search_strategy_vtable, notify_measured) && vt->start &&
                vt->next_batch && vt->notify_measured;
    return check(vt, v1 || v1_3);
  }
  case MT_COMPONENT_TARGET: {
    auto* vt = d.vtable.target;
    return check(vt, vt && MT_HAS_FIELD(vt, mt_target_vtable, build) && vt->describe &&
                         vt->default_components && vt->build);
  }
  case MT_COMPONENT_LAYER: {
    auto* vt = d.vtable.layer;
    // Version 1 (forward on a bare builder) or 1.5 (a layer of a model config tree).
    bool v1 = vt && MT_HAS_FIELD(vt, mt_layer_vtable, forward) && vt->forward;
    bool v1_5 = vt && MT_HAS_FIELD(vt, mt_layer_vtable, build) && vt->schema && vt->build;
    return check(vt, v1 || v1_5);
  }
  default:
    return "unknown component kind " + std::to_string(d.kind);
  }
}

template <typename F> mt_status call_entry(F&& f) {
  clear_last_error();
  try {
    return f();
  } catch (const std::exception& e) {
    set_last_error(std::string("exception escaped the entry point: ") + e.what());
  } catch (...) {
    set_last_error("exception escaped the entry point");
  }
  return MT_ERROR_PLUGIN;
}

} // namespace

struct PluginHost::Impl {
  std::vector<PluginRecord> records;
  std::map<std::string, size_t> by_path; // canonical path -> record index
  std::map<std::pair<int, std::string>, std::shared_ptr<const Registration>> registry;

  const PluginRecord& load(const fs::path& file);
  class Load; // one file's steps of loading
  std::pair<std::shared_ptr<const Registration>, void*>
  create(ComponentKind kind, std::string_view name, std::string_view config) const;
};

PluginHost::PluginHost() : impl_(std::make_unique<Impl>()) {}
PluginHost::~PluginHost() = default;

fs::path PluginHost::builtin_plugin_dir() {
  // This library lives in <prefix>/lib (install tree) or <build>/lib (build tree); plugins
  // live in lib/metatune/plugins next to it in both.
  fs::path self = boost::dll::this_line_location();
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(self, ec);
  return ((ec ? self.lexically_normal() : canonical).parent_path() / "metatune" / "plugins");
}

std::vector<fs::path> PluginHost::parse_search_path(std::string_view list) {
  std::vector<fs::path> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(std::string(list.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

std::vector<fs::path> PluginHost::default_search_path() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv(kPluginPathEnv)) dirs = parse_search_path(env);
  dirs.push_back(builtin_plugin_dir());
  return dirs;
}

size_t PluginHost::discover(const std::vector<fs::path>& dirs) {
  size_t loaded = 0;
  const std::string suffix = boost::dll::shared_library::suffix().string();
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      plugin_log(MT_LOG_DEBUG, "plugin directory " + dir.string() + " does not exist; skipped");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const fs::path& p = entry.path();
      if (p.extension() == suffix && entry.is_regular_file(ec)) files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      size_t before = impl_->records.size();
      const PluginRecord& rec = impl_->load(f);
      if (impl_->records.size() > before && rec.loaded()) ++loaded;
    }
  }
  return loaded;
}

const PluginRecord& PluginHost::load(const fs::path& file) {
  return impl_->load(file);
}

// One plugin file taken through the steps of loading -- look at the file, load it, negotiate
// the ABI, register its components -- each of which either passes or refuses the plugin with
// the reason. The record is kept either way: `metatune plugins` shows why a file was refused.
class PluginHost::Impl::Load {
public:
  Load(Impl& host, fs::path abs, std::string key)
      : host_(host), abs_(std::move(abs)), key_(std::move(key)) {
    rec_.path = abs_.string();
  }

  const PluginRecord& run() {
    if (inspect() && load_library() && negotiate()) register_components();
    host_.by_path[key_] = host_.records.size();
    host_.records.push_back(std::move(rec_));
    return host_.records.back();
  }

private:
  // Every step returns false once it has refused the plugin.
  bool refuse(RefusalReason reason, const std::string& why) {
    rec_.refusal = reason;
    rec_.message = rec_.path + ": " + why;
    rec_.components.clear();
    plugin_log(MT_LOG_WARNING, "plugin refused: " + rec_.message);
    return false;
  }

  // 1. The file, without loading it: an ELF shared library with the entry symbol or the
  // marker section.
  bool inspect() {
    std::error_code ec;
    if (!fs::is_regular_file(abs_, ec))
      return refuse(RefusalReason::NotSharedLibrary, "not a file");
    if (std::string why = elf_problem(abs_); !why.empty())
      return refuse(RefusalReason::NotSharedLibrary, why);
    bool has_marker = false, has_entry = false;
    try {
      boost::dll::library_info info(abs_);
      std::vector<std::string> sections = info.sections();
      has_marker = std::find(sections.begin(), sections.end(), MT_PLUGIN_SECTION) != sections.end();
      // symbols() reads only .symtab, which `strip` removes; the marker section is what finds
      // a stripped plugin.
      std::vector<std::string> symbols = info.symbols();
      has_entry =
          std::find(symbols.begin(), symbols.end(), MT_PLUGIN_ENTRY_SYMBOL) != symbols.end();
    } catch (const std::exception& e) {
      return refuse(RefusalReason::NotSharedLibrary,
                    std::string("not a shared library this host can read (") + e.what() + ")");
    }
    if (!has_marker && !has_entry)
      return refuse(RefusalReason::NotAPlugin,
                    "no " MT_PLUGIN_ENTRY_SYMBOL " symbol and no '" MT_PLUGIN_SECTION
                    "' section: not a metatune plugin");
    return true;
  }

  // 2. The library loaded, and its entry point found.
  bool load_library() {
    plugin_ = std::make_shared<LoadedPlugin>();
    plugin_->path = rec_.path;
    try {
      plugin_->library.load(abs_,
                            boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
      return refuse(RefusalReason::LoadFailed, std::string("cannot be loaded: ") + e.what());
    }
    // Keep the code mapped for the life of the process even after dlclose: a plugin's own
    // threads (OpenMP pools of XGBoost or oneDNN) outlive its objects, and unmapping the code
    // they sit in crashes the process at exit.
    ::dlopen(abs_.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (!plugin_->library.has(MT_PLUGIN_ENTRY_SYMBOL))
      return refuse(RefusalReason::NotAPlugin, "carries the '" MT_PLUGIN_SECTION
                                               "' marker but exports no " MT_PLUGIN_ENTRY_SYMBOL
                                               " symbol (is it declared with MT_PLUGIN_EXPORT?)");
    return true;
  }

  // 3. The entry point called: the ABI versions must agree, and its answer must be whole.
  bool negotiate() {
    auto& entry = plugin_->library.get<mt_status(mt_plugin_negotiation*)>(MT_PLUGIN_ENTRY_SYMBOL);
    neg_ = mt_plugin_negotiation{};
    neg_.struct_size = sizeof neg_;
    neg_.struct_version = 1;
    neg_.host_abi_min = MT_MAKE_ABI_VERSION(MT_PLUGIN_ABI_VERSION_MAJOR, 0);
    neg_.host_abi_max = MT_PLUGIN_ABI_VERSION;
    neg_.host_api = host_api();
    mt_status status = call_entry([&] { return entry(&neg_); });
    std::string entry_message = last_error();

    rec_.abi_version = neg_.plugin_abi_version;
    rec_.name = copy_c_string(neg_.plugin_name);
    rec_.version = copy_c_string(neg_.plugin_version);
    rec_.description = copy_c_string(neg_.plugin_description);
    const std::string host_version = version_string(MT_PLUGIN_ABI_VERSION);
    if (neg_.plugin_abi_version != 0) {
      if (MT_ABI_VERSION_MAJOR(neg_.plugin_abi_version) != MT_PLUGIN_ABI_VERSION_MAJOR)
        return refuse(RefusalReason::WrongMajor,
                      "built for plugin ABI " + version_string(neg_.plugin_abi_version) +
                          " but this host provides ABI " + host_version +
                          "; major versions must match (rebuild the plugin against this metatune)");
      if (MT_ABI_VERSION_MINOR(neg_.plugin_abi_version) > MT_PLUGIN_ABI_VERSION_MINOR)
        return refuse(RefusalReason::NewerMinor,
                      "needs plugin ABI " + version_string(neg_.plugin_abi_version) +
                          ", newer than this host's ABI " + host_version +
                          " (upgrade metatune or rebuild the plugin against this version)");
    }
    if (status != MT_OK)
      return refuse(RefusalReason::InitFailed,
                    std::string("entry point failed (") + mt_status_name(status) +
                        "): " + (entry_message.empty() ? "no message" : entry_message));
    // From here on the plugin is initialised: its unload hook runs whatever happens next.
    plugin_->unload = neg_.unload;
    if (neg_.plugin_abi_version == 0)
      return refuse(RefusalReason::InvalidAnswer,
                    "the entry point did not report its ABI version (plugin_abi_version is 0)");
    if (neg_.num_components && !neg_.components)
      return refuse(RefusalReason::InvalidAnswer, "num_components > 0 but components is NULL");
    return true;
  }

  // 4. Its components validated and registered, all or none.
  bool register_components() {
    std::vector<std::shared_ptr<const Registration>> regs;
    for (size_t i = 0; i < neg_.num_components; ++i) {
      auto reg = registration(i);
      if (!reg) return false;
      regs.push_back(std::move(reg));
    }
    for (auto& reg : regs) {
      rec_.components.push_back(reg->info);
      host_.registry[{static_cast<int>(reg->info.kind), reg->info.name}] = reg;
    }
    plugin_log(MT_LOG_INFO, "loaded plugin '" + rec_.name + "' " + rec_.version + " from " +
                                rec_.path + " (" + std::to_string(regs.size()) + " components)");
    return true;
  }

  // Component i's registration, or null once the plugin is refused for it.
  std::shared_ptr<Registration> registration(size_t i) {
    const mt_component_desc* d = neg_.components[i];
    std::string where = "component #" + std::to_string(i);
    auto invalid = [&](const std::string& why) {
      refuse(RefusalReason::InvalidAnswer, why);
      return nullptr;
    };
    if (!d) return invalid(where + " is NULL");
    if (!MT_HAS_FIELD(d, mt_component_desc, vtable))
      return invalid(where + ": descriptor too small (struct_size " +
                     std::to_string(d->struct_size) + ")");
    if (!d->name || !*d->name) return invalid(where + " has no name");
    where += " ('" + std::string(d->name) + "')";
    if (d->kind < 0 || d->kind >= MT_COMPONENT_KIND_COUNT)
      return invalid(where + ": unknown component kind " + std::to_string(d->kind));
    if (!d->create) return invalid(where + ": no create function");
    if (std::string why = table_problem(*d); !why.empty()) return invalid(where + ": " + why);

    auto kind = static_cast<ComponentKind>(d->kind);
    std::pair<int, std::string> k{d->kind, d->name};
    std::string what = std::string(to_string(kind)) + " '" + d->name + "'";
    if (auto it = host_.registry.find(k); it != host_.registry.end()) {
      refuse(RefusalReason::DuplicateComponent, "duplicate component name: " + what +
                                                    " is already registered by " +
                                                    it->second->info.plugin_path);
      return nullptr;
    }
    if (!mine_.insert(k).second) {
      refuse(RefusalReason::DuplicateComponent,
             "duplicate component name: " + what + " is registered twice by this plugin");
      return nullptr;
    }

    auto reg = std::make_shared<Registration>();
    reg->info =
        ComponentInfo{kind, d->name, copy_c_string(d->description), rec_.path, rec_.name, {}, {}};
    if (MT_HAS_FIELD(d, mt_component_desc, joins_defaults) && d->joins_defaults &&
        *d->joins_defaults) {
      try {
        reg->info.joins_defaults = parse_defaults_declaration(kind, d->joins_defaults);
      } catch (const std::invalid_argument& e) {
        return invalid(where + ": joins_defaults: " + e.what());
      }
    }
    if (kind == ComponentKind::Layer && MT_HAS_FIELD(d->vtable.layer, mt_layer_vtable, build) &&
        d->vtable.layer->schema) {
      reg->info.layer_schema = copy_c_string(d->vtable.layer->schema);
      try {
        schema_check(reg->info.layer_schema);
      } catch (const std::invalid_argument& e) {
        return invalid(where + ": layer schema: " + e.what());
      }
    }
    reg->desc = d;
    reg->plugin = plugin_;
    return reg;
  }

  Impl& host_;
  const fs::path abs_;
  const std::string key_;
  PluginRecord rec_;
  std::shared_ptr<LoadedPlugin> plugin_;
  mt_plugin_negotiation neg_{};
  std::set<std::pair<int, std::string>> mine_; // this plugin's components so far
};

const PluginRecord& PluginHost::Impl::load(const fs::path& file) {
  std::error_code ec;
  fs::path abs = fs::absolute(file, ec).lexically_normal();
  fs::path canonical = fs::weakly_canonical(abs, ec);
  std::string key = (ec ? abs : canonical).string();
  if (auto it = by_path.find(key); it != by_path.end()) return records[it->second];
  return Load(*this, std::move(abs), std::move(key)).run();
}

const std::vector<PluginRecord>& PluginHost::plugins() const {
  return impl_->records;
}

std::vector<const PluginRecord*> PluginHost::refused() const {
  std::vector<const PluginRecord*> out;
  for (const auto& r : impl_->records)
    if (!r.loaded()) out.push_back(&r);
  return out;
}

std::vector<ComponentInfo> PluginHost::components() const {
  std::vector<ComponentInfo> out;
  for (const auto& r : impl_->records)
    out.insert(out.end(), r.components.begin(), r.components.end());
  return out;
}

std::vector<ComponentInfo> PluginHost::components(ComponentKind kind) const {
  std::vector<ComponentInfo> out;
  for (const auto& c : components())
    if (c.kind == kind) out.push_back(c);
  return out;
}

const ComponentInfo* PluginHost::find(ComponentKind kind, std::string_view name) const {
  auto it = impl_->registry.find({static_cast<int>(kind), std::string(name)});
  return it == impl_->registry.end() ? nullptr : &it->second->info;
}

std::pair<std::shared_ptr<const Registration>, void*>
PluginHost::Impl::create(ComponentKind kind, std::string_view name, std::string_view config) const {
  auto it = registry.find({static_cast<int>(kind), std::string(name)});
  std::string what = std::string(to_string(kind)) + " '" + std::string(name) + "'";
  if (it == registry.end()) {
    std::string known;
    for (const auto& [k, reg] : registry)
      if (k.first == static_cast<int>(kind)) known += (known.empty() ? "" : ", ") + k.second;
    throw std::out_of_range("no " + what + " is registered by any loaded plugin (known: " +
                            (known.empty() ? "none" : known) + ")");
  }
  const auto& reg = it->second;
  void* self = nullptr;
  mt_status st = call_entry([&] {
    return reg->desc->create(host_api(), mt_str{config.data(), config.size()}, &self);
  });
  if (st != MT_OK) {
    std::string message = last_error();
    throw PluginError(reg->info.plugin_path, what, "create", st,
                      message.empty() ? "no message" : message);
  }
  return {reg, self};
}

#define MT_DEFINE_CREATE(Method, Class, Kind)                                                      \
  std::unique_ptr<Class> PluginHost::Method(std::string_view name, std::string_view config)        \
      const {                                                                                      \
    auto [reg, self] = impl_->create(ComponentKind::Kind, name, config);                           \
    return std::unique_ptr<Class>(new Class(reg, self));                                           \
  }

MT_DEFINE_CREATE(create_schedule_rule, PluginScheduleRule, ScheduleRule)
MT_DEFINE_CREATE(create_mutator, PluginMutator, Mutator)
MT_DEFINE_CREATE(create_postproc, PluginPostproc, Postproc)
MT_DEFINE_CREATE(create_cost_model, PluginCostModel, CostModel)
MT_DEFINE_CREATE(create_search_strategy, PluginSearchStrategy, SearchStrategy)
MT_DEFINE_CREATE(create_target, PluginTarget, Target)
MT_DEFINE_CREATE(create_layer, PluginLayer, Layer)

#undef MT_DEFINE_CREATE

} // namespace mt
