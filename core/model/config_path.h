// Field paths inside a config tree: "layer.attention.num_heads", "layers[2].input_dim". The
// same spelling is used to address a field (Config::set) and to report one in an error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mt {

struct ConfigPathStep {
  std::string field;
  std::optional<size_t> index; // an element of a child list
};

// Throws ConfigError for an empty path, an empty or non-identifier step, or a malformed index.
std::vector<ConfigPathStep> parse_config_path(std::string_view path);

// `parent` + "." + `field` ("" + "a" = "a").
std::string join_config_path(const std::string& parent, const std::string& field);
// `parent` + "[i]".
std::string index_config_path(const std::string& parent, size_t index);

} // namespace mt
