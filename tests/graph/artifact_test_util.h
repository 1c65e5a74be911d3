// What the ahead-of-time artifact tests share (aot_model_test.cpp, aot_generation_test.cpp):
// one artifact folder compiled by the CLI for the whole suite, copies of it to break, and its
// weights read back as the in-process executors take them.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "cli_run.h"
#include "core/model/safetensors_file.h"
#include "core/runtime/ndarray.h"

namespace mt::graph_test {

// `Self` names the folder (Self::kFolder) and says how to compile it (Self::compile_args(),
// the `metatune` arguments before --out).
template <class Self> class ArtifactTest : public ::testing::Test {
protected:
  static std::filesystem::path dir() {
    return std::filesystem::temp_directory_path() /
           (std::string(Self::kFolder) + "_" + std::to_string(getpid()));
  }
  static void SetUpTestSuite() {
    std::filesystem::remove_all(dir());
    compile_output() = metatune(Self::compile_args() + " --out " + dir().string());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir()); }
  static CliResult& compile_output() {
    static CliResult r;
    return r;
  }
  // A copy of the artifact to break.
  static std::filesystem::path copy_of(const std::string& name) {
    std::filesystem::path d = dir().string() + "_" + name;
    std::filesystem::remove_all(d);
    std::filesystem::copy(dir(), d, std::filesystem::copy_options::recursive);
    return d;
  }
  void SetUp() override { ASSERT_EQ(compile_output().status, 0) << compile_output().output; }
};

// The artifact's weights.safetensors, by parameter path.
inline std::map<std::string, NDArray> artifact_weights(const std::filesystem::path& dir) {
  std::map<std::string, NDArray> weights;
  SafetensorsFile file = SafetensorsFile::open((dir / "weights.safetensors").string());
  for (const SafetensorsTensorInfo& t : file.tensors()) {
    NDArray a(DType::f32(), t.shape);
    file.to_f32(t.name, {a.data_as<float>(), static_cast<size_t>(a.num_elements())});
    weights.emplace(t.name, std::move(a));
  }
  return weights;
}

} // namespace mt::graph_test
