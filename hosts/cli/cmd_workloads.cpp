// `metatune workloads`: lists the workload library with parameters and defaults.
#include <iostream>

#include "core/workload/library.h"
#include "hosts/cli/command.h"

namespace {

mt::cli::RegisterCommand reg("workloads", [](CLI::App& app) -> std::function<int()> {
  auto* sub = app.add_subcommand("workloads", "List the workload library");
  auto verbose = std::make_shared<bool>(false);
  sub->add_flag("-v,--verbose", *verbose, "Show parameter documentation");
  return [verbose] {
    for (auto& w : mt::list_workloads()) {
      std::cout << w.name << "(";
      for (size_t i = 0; i < w.params.size(); ++i)
        std::cout << (i ? "," : "") << w.params[i].name << "=" << w.params[i].default_value;
      std::cout << ")\n    " << w.doc << "\n";
      if (*verbose)
        for (auto& p : w.params) std::cout << "      " << p.name << ": " << p.doc << "\n";
    }
    return 0;
  };
});

} // namespace
