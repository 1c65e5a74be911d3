#include "core/plugin/component_kind.h"

namespace mt {

const char* to_string(ComponentKind k) {
  switch (k) {
  case ComponentKind::ScheduleRule:
    return "schedule_rule";
  case ComponentKind::Mutator:
    return "mutator";
  case ComponentKind::Postproc:
    return "postproc";
  case ComponentKind::CostModel:
    return "cost_model";
  case ComponentKind::SearchStrategy:
    return "search_strategy";
  case ComponentKind::Target:
    return "target";
  case ComponentKind::Layer:
    return "layer";
  }
  return "unknown";
}

std::optional<ComponentKind> parse_component_kind(std::string_view s) {
  for (int i = 0; i < kNumComponentKinds; ++i) {
    auto k = static_cast<ComponentKind>(i);
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

} // namespace mt
