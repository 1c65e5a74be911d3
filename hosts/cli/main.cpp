// The `metatune` command-line tool: a CLI11 app whose subcommands are registered by the
// cmd_*.cpp files (command.h); main parses, then runs the one subcommand given.
#include <algorithm>
#include <exception>
#include <iostream>

#include "hosts/cli/command.h"

namespace mt::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

} // namespace mt::cli

int main(int argc, char** argv) {
  CLI::App app{"metatune: tune tensor programs with plugin-provided rules, models and targets"};
  app.require_subcommand(1);
  std::vector<mt::cli::Command> commands = mt::cli::registry();
  // Registration order depends on link order; help lists commands by name.
  std::sort(commands.begin(), commands.end(),
            [](const mt::cli::Command& a, const mt::cli::Command& b) { return a.name < b.name; });
  std::vector<std::function<int()>> runs;
  for (const mt::cli::Command& c : commands)
    runs.push_back(c.setup(app));
  try {
    app.parse(argc, argv);
    for (size_t i = 0; i < commands.size(); ++i)
      if (app.got_subcommand(commands[i].name)) return runs[i]();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "metatune: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
