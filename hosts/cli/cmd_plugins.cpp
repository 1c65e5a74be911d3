// `metatune plugins [--json] [--path DIR]... [--no-default-path] [--strict]`: every plugin
// found on the search path, loaded (with ABI version and components) or refused (with why).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plugin/host_api.h"
#include "core/plugin/plugin_host.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct PluginsOptions {
  bool json = false;
  bool strict = false;
  bool no_default_path = false;
  std::vector<std::string> paths;
};

std::string abi_string(uint32_t v) {
  return std::to_string(MT_ABI_VERSION_MAJOR(v)) + "." + std::to_string(MT_ABI_VERSION_MINOR(v));
}

// What a target says about its device: {"device": ..., "target": ...} or {"unavailable": why}
// (a GPU target on a machine without that GPU), from describe_device().
nlohmann::json device_of(const PluginHost& host, const ComponentInfo& c) {
  nlohmann::json out = nlohmann::json::object();
  try {
    nlohmann::json d = nlohmann::json::parse(host.create_target(c.name)->describe_device());
    for (const char* k : {"kind", "device", "target", "unavailable"})
      if (d.is_object() && d.contains(k) && d[k].is_string()) out[k] = d[k];
  } catch (const std::exception& e) {
    out["unavailable"] = std::string("describe_device failed: ") + e.what();
  }
  return out;
}

std::string device_line(const nlohmann::json& d) {
  if (d.contains("unavailable")) return d["unavailable"].get<std::string>();
  std::string s = d.value("device", d.value("kind", std::string("?")));
  std::string t = d.value("target", std::string());
  if (t.size() > 80) t = t.substr(0, t.find(" -mattr=")); // the CPU feature list runs long
  if (!t.empty()) s += (s.empty() ? "" : "  ") + std::string("[") + t + "]";
  return s;
}

nlohmann::json to_json(const std::vector<std::filesystem::path>& search, const PluginHost& host) {
  nlohmann::json j;
  j["host_abi_version"] = abi_string(MT_PLUGIN_ABI_VERSION);
  j["search_path"] = nlohmann::json::array();
  for (const auto& d : search)
    j["search_path"].push_back(d.string());
  j["plugins"] = nlohmann::json::array();
  for (const PluginRecord& r : host.plugins()) {
    nlohmann::json p;
    p["path"] = r.path;
    p["loaded"] = r.loaded();
    p["abi_version"] = r.abi_version ? nlohmann::json(r.abi_version_string()) : nlohmann::json();
    p["name"] = r.name;
    p["version"] = r.version;
    p["description"] = r.description;
    p["components"] = nlohmann::json::array();
    for (const ComponentInfo& c : r.components) {
      nlohmann::json cj = {
          {"kind", to_string(c.kind)}, {"name", c.name}, {"description", c.description}};
      if (c.joins_defaults)
        cj["joins_defaults"] = nlohmann::json::parse(to_json_text(*c.joins_defaults));
      if (c.kind == ComponentKind::Target) cj["device"] = device_of(host, c);
      p["components"].push_back(std::move(cj));
    }
    if (!r.loaded()) {
      p["refusal"] = to_string(r.refusal);
      p["message"] = r.message;
    }
    j["plugins"].push_back(std::move(p));
  }
  return j;
}

void print_text(const std::vector<std::filesystem::path>& search, const PluginHost& host) {
  std::cout << "plugin ABI " << abi_string(MT_PLUGIN_ABI_VERSION) << "; search path:\n";
  for (const auto& d : search) {
    std::error_code ec;
    std::cout << "  " << d.string() << (std::filesystem::is_directory(d, ec) ? "" : "  (missing)")
              << "\n";
  }
  size_t loaded = 0;
  for (const PluginRecord& r : host.plugins())
    loaded += r.loaded();
  std::cout << "\n" << loaded << " plugin(s) loaded";
  if (host.plugins().size() > loaded)
    std::cout << ", " << host.plugins().size() - loaded << " refused";
  std::cout << "\n";
  for (const PluginRecord& r : host.plugins()) {
    if (!r.loaded()) continue;
    std::cout << "\n"
              << r.name << " " << r.version << "  (ABI " << r.abi_version_string() << ")\n  "
              << r.path << "\n";
    if (!r.description.empty()) std::cout << "  " << r.description << "\n";
    for (const ComponentInfo& c : r.components) {
      std::cout << "    " << to_string(c.kind) << "  " << c.name;
      if (!c.description.empty()) std::cout << "  -- " << c.description;
      if (c.joins_defaults) {
        std::cout << "  [joins the defaults of";
        for (const auto& t : c.joins_defaults->targets)
          std::cout << " " << t;
        if (c.joins_defaults->probability > 0)
          std::cout << ", weight " << c.joins_defaults->probability;
        std::cout << "]";
      }
      std::cout << "\n";
      if (c.kind == ComponentKind::Target)
        std::cout << "      device: " << device_line(device_of(host, c)) << "\n";
    }
  }
  bool header = false;
  for (const PluginRecord& r : host.plugins()) {
    if (r.loaded()) continue;
    if (!header) std::cout << "\nrefused:\n";
    header = true;
    std::cout << "  [" << to_string(r.refusal) << "] " << r.message << "\n";
  }
}

int run_plugins(const PluginsOptions& opt) {
  std::vector<std::filesystem::path> search;
  for (const auto& p : opt.paths)
    search.emplace_back(p);
  if (!opt.no_default_path)
    for (const auto& p : PluginHost::default_search_path())
      search.push_back(p);
  // Refusals are part of this command's output; do not also log them to stderr.
  set_plugin_log_sink([](int, std::string_view) {});
  PluginHost host;
  host.discover(search);
  set_plugin_log_sink(nullptr);
  if (opt.json)
    std::cout << to_json(search, host).dump(2) << "\n";
  else
    print_text(search, host);
  return opt.strict && !host.refused().empty() ? 1 : 0;
}

RegisterCommand reg("plugins", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<PluginsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plugins", "List every plugin found: path, ABI version and components, or why it was "
                 "refused. Search path: --path dirs, then METATUNE_PLUGIN_PATH, then the "
                 "installation's lib/metatune/plugins.");
  cmd->add_flag("--json", opt->json, "Print JSON instead of text");
  cmd->add_option("--path", opt->paths, "Also search this directory (first; repeatable)");
  cmd->add_flag("--no-default-path", opt->no_default_path, "Search only the --path directories");
  cmd->add_flag("--strict", opt->strict, "Exit with status 1 if any plugin was refused");
  return [opt] { return run_plugins(*opt); };
});

} // namespace

} // namespace mt::cli
