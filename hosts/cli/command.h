// Subcommand registry of the `metatune` CLI: each cmd_*.cpp file registers one subcommand
// with CLI11, so adding a command never touches main.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mt::cli {

struct Command {
  std::string name;
  // Adds the subcommand to `app`; the returned callback runs it and gives the exit code.
  std::function<std::function<int()>(CLI::App& app)> setup;
};

std::vector<Command>& registry();

struct RegisterCommand {
  RegisterCommand(std::string name, std::function<std::function<int()>(CLI::App&)> setup) {
    registry().push_back({std::move(name), std::move(setup)});
  }
};

} // namespace mt::cli
