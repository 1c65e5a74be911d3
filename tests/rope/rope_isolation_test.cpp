// RoPE lives in its own plugin library: no library of core, nor the metatune program, links
// it (they find it at run time through the plugin host), and the plugin links no core library
// (it is written against sdk/ only). Checked on the built binaries with ldd, as the runtime's
// isolation is (tests/graph/aot_model_test.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ldd's report: one line per library, "name => path (address)".
std::string dependencies(const std::string& binary) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("ldd '" + binary + "' 2>&1").c_str(), "r"),
                                          pclose);
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p.get()))
    out += buf.data();
  return out;
}

// The names of the libraries ldd lists (their paths may name anything, this worktree too).
std::vector<std::string> library_names(const std::string& ldd) {
  std::vector<std::string> names;
  std::istringstream lines(ldd);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    if (words >> name) names.push_back(name);
  }
  return names;
}

TEST(RopeIsolation, CoreDoesNotLinkTheRopePlugin) {
  for (const char* binary : {METATUNE_CORE_LIBRARY, METATUNE_PLUGIN_HOST_LIBRARY,
                             METATUNE_TUNE_LIBRARY, METATUNE_MODEL_LIBRARY, METATUNE_CLI}) {
    std::string deps = dependencies(binary);
    ASSERT_NE(deps.find("libc.so"), std::string::npos) << binary << ":\n" << deps;
    for (const std::string& lib : library_names(deps))
      EXPECT_EQ(lib.find("rope"), std::string::npos) << binary << " needs " << lib << ":\n" << deps;
  }
}

TEST(RopeIsolation, RopePluginLinksNoCoreLibrary) {
  std::string deps = dependencies(ROPE_PLUGIN_FILE);
  ASSERT_NE(deps.find("libc.so"), std::string::npos) << deps;
  for (const std::string& lib : library_names(deps))
    for (const char* core : {"libmetatune", "LLVM", "dnnl"})
      EXPECT_EQ(lib.find(core), std::string::npos) << "rope.so needs " << lib << ":\n" << deps;
}

} // namespace
