// The std_rules plugin's entry point: registers every standard component.
#include "metatune/sdk/plugin.hpp"

#include "std_components.hpp"

METATUNE_PLUGIN("std_rules", "0.1",
                "Standard schedule rules, mutators and postprocessors (MetaSchedule's defaults)") {
  mt::std_rules::register_all(registry);
}
