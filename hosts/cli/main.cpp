// The `metatune` command-line tool: dispatches to the subcommands registered in cmd_*.cpp.
#include <exception>
#include <iostream>
#include <map>

#include "hosts/cli/command.h"

namespace mt::cli {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
} // namespace mt::cli

int main(int argc, char** argv) {
  CLI::App app{"metatune: finds fast tensor programs for this machine"};
  app.require_subcommand(1);
  std::map<std::string, std::function<int()>> runners;
  std::map<std::string, CLI::App*> subs;
  for (auto& c : mt::cli::registry()) runners[c.name] = c.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto* sub : app.get_subcommands()) {
    try {
      return runners.at(sub->get_name())();
    } catch (const std::exception& e) {
      std::cerr << "metatune " << sub->get_name() << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  return 1;
}
