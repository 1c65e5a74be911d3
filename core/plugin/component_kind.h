// The kinds of component a plugin can register, on the C++ side (values equal to the ABI's
// mt_component_kind).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mt {

enum class ComponentKind : int32_t {
  ScheduleRule = 0,
  Mutator = 1,
  Postproc = 2,
  CostModel = 3,
  SearchStrategy = 4,
  Target = 5,
  Layer = 6,
};
inline constexpr int kNumComponentKinds = 7;

// "schedule_rule", "mutator", "postproc", "cost_model", "search_strategy", "target", "layer".
const char* to_string(ComponentKind k);
std::optional<ComponentKind> parse_component_kind(std::string_view s);

} // namespace mt
