// The exception the plugin host throws when a plugin component fails a call: it names the
// plugin file, the component and the operation, and carries the plugin's own message. Search
// code catches it to drop one candidate instead of the whole run.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mt {

class PluginError : public std::runtime_error {
public:
  PluginError(std::string plugin_path, std::string component, std::string operation, int32_t status,
              const std::string& message);
  const std::string& plugin_path() const { return plugin_path_; }
  const std::string& component() const { return component_; } // "schedule_rule 'x.Name'"
  const std::string& operation() const { return operation_; } // "apply", "create", ...
  int32_t status() const { return status_; }                  // an mt_status

private:
  std::string plugin_path_, component_, operation_;
  int32_t status_;
};

} // namespace mt
