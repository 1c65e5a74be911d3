// Opening an artifact's kernels and weights (see artifact_files.h).
#include "artifact_files.h"

#include <thread>

namespace mt::rt {

using nlohmann::json;

void check_artifact_header(const json& m, const std::string& path, const std::string& format) {
  const std::string kind = format.substr(format.find('-') + 1);
  if (m.value("format", "") != format)
    throw Error(path + ": not a metatune " + kind + " artifact (format '" + m.value("format", "") +
                "', expected '" + format + "')");
  if (m.at("version").get<int>() != 1)
    throw Error(path + ": artifact version " + m.at("version").dump() +
                " (this runtime reads version 1)");
}

std::unique_ptr<ArtifactFiles> ArtifactFiles::open(const json& m, const std::string& dir,
                                                   const std::string& path,
                                                   const LoadOptions& options) {
  const json& lib = m.at("library");
  const std::string abi = lib.at("abi").get<std::string>();
  if (abi != "mt_llvm_kernel")
    throw Error(path + ": kernels use the calling convention '" + abi +
                "'; this runtime calls 'mt_llvm_kernel'");
  const json& rt = lib.at("runtime");
  if (!rt.is_null() && (rt.at("kind").get<std::string>() != "mt_llvm_runtime" ||
                        rt.at("version").get<uint32_t>() > MT_LLVM_RUNTIME_VERSION))
    throw Error(path + ": kernels need the runtime services " + rt.dump() +
                "; this runtime provides mt_llvm_runtime version " +
                std::to_string(MT_LLVM_RUNTIME_VERSION));
  auto f = std::make_unique<ArtifactFiles>();
  f->library = std::make_unique<KernelLibrary>(dir + "/" + m.at("kernels").get<std::string>());
  f->weights = std::make_unique<WeightsFile>(dir + "/" + m.at("weights").get<std::string>());
  f->pool = std::make_unique<ThreadPool>(
      options.num_threads > 0 ? options.num_threads
                              : static_cast<int>(std::thread::hardware_concurrency()));
  f->packed = std::make_unique<PackedWeights>();
  f->context.library = f->library.get();
  f->context.weights = f->weights.get();
  f->context.packed = f->packed.get();
  f->context.pool = f->pool.get();
  for (const json& k : lib.at("kernels"))
    f->context.kernels[k.at("symbol").get<std::string>()] = &k;
  return f;
}

} // namespace mt::rt
