// `metatune models [NAME|FILE]`: lists the built-in models, or the tuning tasks of one model
// (each distinct workload with its weight), as `metatune tune --model` would tune them.
#include <iomanip>
#include <iostream>

#include "core/workload/model_tasks.h"
#include "hosts/cli/command.h"

namespace {

void print_model(const mt::ModelTasks& m, bool tasks) {
  double calls = 0;
  for (const auto& t : m.tasks)
    calls += t.weight;
  std::cout << m.name << ": " << m.tasks.size() << " distinct workloads, " << calls
            << " operator calls per inference\n";
  if (!m.description.empty()) std::cout << "    " << m.description << "\n";
  if (!tasks) return;
  for (const auto& t : m.tasks)
    std::cout << "  " << std::setw(5) << t.weight << " x  " << t.workload
              << (t.name.empty() ? "" : "   [" + t.name + "]") << "\n";
}

mt::cli::RegisterCommand reg("models", [](CLI::App& app) -> std::function<int()> {
  auto* sub = app.add_subcommand(
      "models", "List the built-in models, or the tuning tasks of one (a name or a JSON file)");
  auto which = std::make_shared<std::string>();
  sub->add_option("model", *which, "Built-in model name or model JSON file");
  return [which] {
    if (!which->empty()) {
      print_model(mt::resolve_model(*which), true);
      return 0;
    }
    for (const auto& name : mt::builtin_model_names())
      print_model(mt::builtin_model(name), false);
    std::cout << "(`metatune models NAME` lists a model's tasks; `metatune tune --model NAME` "
                 "tunes them under one budget)\n";
    return 0;
  };
});

} // namespace
