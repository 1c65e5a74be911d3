// What a plugin author does, for the tests that load out-of-tree plugins (tests/abi, and the
// layer plugin of tests/graph): install the SDK component of this build tree into a temporary
// prefix, then configure and build a separate CMake project against it (find_package(metatune)
// + metatune_add_plugin). Everything lives in one temporary folder, removed at the end; the
// commands' output goes to one log file. The including target defines MT_TEST_PROJECT_BINARY_DIR,
// MT_TEST_CMAKE_COMMAND and MT_TEST_CMAKE_GENERATOR.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mt::abi_test {

class ExternalBuild {
public:
  explicit ExternalBuild(const std::string& tag)
      : root_(std::filesystem::temp_directory_path() /
              ("metatune_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~ExternalBuild() { std::filesystem::remove_all(root_); }
  ExternalBuild(const ExternalBuild&) = delete;
  ExternalBuild& operator=(const ExternalBuild&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path prefix() const { return root_ / "prefix"; }

  // cmake --install <this build tree> --component sdk into prefix().
  bool install_sdk() const {
    return run("'" + cmake() + "' --install '" MT_TEST_PROJECT_BINARY_DIR "' --prefix '" +
               prefix().string() + "' --component sdk") == 0;
  }
  // Configures and builds the project in `source` into root()/`name`; that folder, or empty on
  // failure (see log()).
  std::filesystem::path build(const std::string& source, const std::string& name,
                              const std::string& configure_args = "") const {
    std::filesystem::path dir = root_ / name;
    if (run("'" + cmake() + "' -S '" + source + "' -B '" + dir.string() +
            "' -G '" MT_TEST_CMAKE_GENERATOR "' -DCMAKE_PREFIX_PATH='" + prefix().string() + "' " +
            configure_args) != 0 ||
        run("'" + cmake() + "' --build '" + dir.string() + "'") != 0)
      return {};
    return dir;
  }
  std::string log() const {
    std::ifstream f(log_path());
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

private:
  static std::string cmake() { return MT_TEST_CMAKE_COMMAND; }
  std::filesystem::path log_path() const { return root_ / "log.txt"; }
  int run(const std::string& cmd) const {
    return std::system((cmd + " >>'" + log_path().string() + "' 2>&1").c_str());
  }

  std::filesystem::path root_;
};

} // namespace mt::abi_test
