// Configs as JSON: a config is an object naming its kind and then every field of its schema, in
// the schema's order, with children as nested objects and unset fields as null:
//
//   {
//     "kind": "TransformerLayer",
//     "input_dim": 512,
//     "attention": {
//       "kind": "Attention",
//       "input_dim": 512,
//       "num_heads": 8,
//       "dropout": 0.1
//     },
//     "norm": null
//   }
//
// The text is canonical: config_to_json(config_from_json(config_to_json(c))) is byte-for-byte
// config_to_json(c), and config_from_json(config_to_json(c)) == c (floats are written so that
// they read back exactly). A hand-written file may leave fields out: they keep their defaults.
#pragma once

#include <string>
#include <string_view>

#include "core/model/config.h"
#include "core/model/config_registry.h"

namespace mt {

std::string config_to_json(const Config& config);

// Reads a config; `source` names the text in errors (a file name), "config JSON" if empty.
// Malformed JSON, an unknown kind or field, a value of the wrong type or out of range throw
// ConfigError: "<source>: at 'layer.attention.num_heads': expected int, given string \"8\"".
// Values at push-down targets that equal their parent's are marked Pushed (see
// dimension_push_down.h); every other value read counts as set.
Config config_from_json(const ConfigRegistry& registry, std::string_view text,
                        const std::string& source = "");

// Files: errors name the path.
Config load_config_file(const ConfigRegistry& registry, const std::string& path);
void save_config_file(const Config& config, const std::string& path);

} // namespace mt
