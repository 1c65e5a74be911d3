// Shared by the chat-template tests: JSON (in the order written) as template values.
#pragma once

#include <nlohmann/json.hpp>

#include "core/jinja/value.h"

namespace mt::tok::testing {

inline jinja::Value jinja_value(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
  case T::null:
    return jinja::None{};
  case T::boolean:
    return j.get<bool>();
  case T::number_integer:
  case T::number_unsigned:
    return j.get<int64_t>();
  case T::number_float:
    return j.get<double>();
  case T::string:
    return j.get<std::string>();
  case T::array: {
    jinja::List l;
    for (const auto& x : j)
      l.push_back(jinja_value(x));
    return l;
  }
  case T::object: {
    jinja::Dict d;
    for (auto it = j.begin(); it != j.end(); ++it)
      d.emplace_back(it.key(), jinja_value(it.value()));
    return d;
  }
  default:
    return jinja::None{};
  }
}

} // namespace mt::tok::testing
