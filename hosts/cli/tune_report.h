// What a tuning run reports at its end, shared by `metatune tune` and `metatune model tune`:
// the per-task summary, the tuned-against-library line per task, and the JSON object of
// --json.
#pragma once

#include <nlohmann/json.hpp>

#include "core/tuner/tuner.h"

namespace mt::cli {

// "oneDNN" for the oneDNN target, else the component's name.
std::string library_display_name(const std::string& component);
nlohmann::json number_or_null(double v);
nlohmann::json to_json(const TuneResult& r, const TuneOptions& o);
void print_summary(const TuneResult& r);
// One line per task with a library implementation: the tuned kernel against the library's,
// side by side when they were re-measured together, and which implementation is used.
void print_comparison(const TuneResult& r);

} // namespace mt::cli
