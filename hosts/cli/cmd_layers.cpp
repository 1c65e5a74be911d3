// `metatune layers [--json] [--path DIR]...`: every model layer the loaded plugins register,
// with its config fields (type, default or "required", one-line doc) from its schema.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plugin/plugin_components.h"
#include "core/plugin/plugin_host.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct LayersOptions {
  bool json = false;
  std::vector<std::string> paths;
};

// One layer: its schema parsed, or why it cannot be listed.
nlohmann::json describe(const ComponentInfo& c) {
  nlohmann::json j = {{"name", c.name}, {"description", c.description}};
  const std::string& schema = c.layer_schema; // checked when the plugin registered
  if (schema.empty()) {
    j["model_layer"] = false; // version 1: forward only
    return j;
  }
  j["model_layer"] = true;
  nlohmann::json s = nlohmann::json::parse(schema, nullptr, /*allow_exceptions=*/false);
  if (s.is_discarded() || !s.is_object()) {
    j["error"] = "malformed schema (not a JSON object)";
    return j;
  }
  j["schema"] = s;
  return j;
}

void print_text(const nlohmann::json& layers) {
  for (const auto& l : layers) {
    std::cout << l["name"].get<std::string>() << "\n    " << l["description"].get<std::string>()
              << "\n";
    if (l.contains("error")) {
      std::cout << "    (cannot list: " << l["error"].get<std::string>() << ")\n";
      continue;
    }
    if (!l["model_layer"].get<bool>()) {
      std::cout << "    (version-1 layer: forward only, not usable in a config tree)\n";
      continue;
    }
    const auto& s = l["schema"];
    for (const auto& f : s.value("fields", nlohmann::json::array())) {
      std::string what = f.value("type", std::string("?"));
      if (f.value("required", false))
        what += ", required";
      else if (f.contains("default"))
        what += " = " + f["default"].dump();
      std::cout << "      " << f.value("name", std::string("?")) << " (" << what << ")";
      if (f.contains("doc")) std::cout << ": " << f["doc"].get<std::string>();
      std::cout << "\n";
    }
    if (s.contains("push_down") && s["push_down"].is_object())
      for (const auto& [from, to] : s["push_down"].items())
        std::cout << "      pushes " << from << " -> " << to.dump() << "\n";
  }
}

RegisterCommand reg("layers", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<LayersOptions>();
  auto* sub = app.add_subcommand(
      "layers", "List the model layers of the loaded plugins with their config fields");
  sub->add_flag("--json", opt->json, "One JSON document instead of text");
  sub->add_option("--path", opt->paths, "Plugin directory searched first (repeatable)");
  return [opt] {
    PluginHost host;
    std::vector<std::filesystem::path> search(opt->paths.begin(), opt->paths.end());
    for (const auto& p : PluginHost::default_search_path())
      search.push_back(p);
    host.discover(search);
    nlohmann::json layers = nlohmann::json::array();
    for (const ComponentInfo& c : host.components(ComponentKind::Layer))
      layers.push_back(describe(c));
    if (opt->json)
      std::cout << layers.dump(2) << "\n";
    else if (layers.empty())
      std::cout << "no layer found (search path: plugins named by --path, METATUNE_PLUGIN_PATH, "
                   "the installation's lib/metatune/plugins)\n";
    else
      print_text(layers);
    return 0;
  };
});

} // namespace

} // namespace mt::cli
