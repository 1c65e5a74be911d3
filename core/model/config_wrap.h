// Wrapping one child of every config of a kind, the way a feature that sits around a layer
// reaches every place that layer is used in a model: rotary position embeddings around the QKV
// projection of every attention layer is
//
//   Config rope = reg.make("rope.RotaryQKVLinear");
//   int n = wrap_child_everywhere(model, reg, "std.MultiheadAttention", "qkv", rope,
//                                 "input_linear");
//
// Built on Config::replace_kind; nothing here knows the wrapper's kind.
#pragma once

#include <string>

#include "core/model/config.h"
#include "core/model/config_registry.h"

namespace mt {

// Every config of `kind` in `root` (the root included) gets its child `field` replaced by a
// copy of `wrapper` whose child field `inner_field` holds the original child. A child that is
// already of the wrapper's kind is left alone (wrapping twice would apply the feature twice),
// and so is an unset one. Returns the number of children wrapped. Throws ConfigError, leaving
// `root` as it was, when `kind` is unknown to `reg`, `field` is not a child field of it, or
// `inner_field` is not a child field of the wrapper.
int wrap_child_everywhere(Config& root, const ConfigRegistry& reg, const std::string& kind,
                          const std::string& field, const Config& wrapper,
                          const std::string& inner_field);

} // namespace mt
