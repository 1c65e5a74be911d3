// Loading and running an artifact (see compiled_model.h). Everything model.json says is
// checked at load time against the kernel library's descriptor and the weights (argument
// counts and sizes, arena bounds, symbols, tensors), so that run() only checks the inputs.
#include "metatune/runtime/compiled_model.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kernel_library.h"
#include "thread_pool.h"
#include "weights_file.h"

namespace mt::rt {

namespace {

using nlohmann::json;

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "bool") return 1;
  size_t digits = dtype.find_first_of("0123456789");
  if (digits == std::string::npos) return 0;
  int bits = std::atoi(dtype.c_str() + digits);
  return bits <= 8 ? 1 : static_cast<size_t>(bits / 8);
}

TensorInfo tensor_info(const json& j) {
  TensorInfo t;
  t.name = j.at("name").get<std::string>();
  t.dtype = j.at("dtype").get<std::string>();
  t.shape = j.at("shape").get<std::vector<int64_t>>();
  if (dtype_bytes(t.dtype) == 0) throw Error("unknown dtype '" + t.dtype + "'");
  return t;
}

// One argument of a kernel call: where its buffer is when the model runs.
struct Arg {
  enum Kind { Input, Output, Param, Arena } kind = Input;
  size_t index = 0;            // Input, Output
  size_t offset = 0;           // Arena
  const void* param = nullptr; // Param
};

struct Call {
  std::string group, symbol;
  mt_llvm_kernel_fn fn = nullptr;
  std::vector<Arg> args;
};

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": missing or unreadable (the artifact's graph)");
  std::stringstream text;
  text << f.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

} // namespace

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t TensorInfo::bytes() const {
  return static_cast<size_t>(num_elements()) * dtype_bytes(dtype);
}

std::string TensorInfo::to_string() const {
  std::string s = dtype + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(TensorInfo info)
    : info_(std::move(info)), data_(new std::byte[std::max<size_t>(1, info_.bytes())]()) {}

struct CompiledModel::State {
  std::string dir, model;
  std::vector<TensorInfo> inputs, outputs;
  size_t num_kernels = 0, arena_bytes = 0, alignment = 64;
  std::unique_ptr<KernelLibrary> library;
  std::unique_ptr<WeightsFile> weights;
  std::unique_ptr<ThreadPool> pool;
  std::vector<Call> calls;
  std::unique_ptr<std::byte[]> arena_storage;
  std::byte* arena = nullptr;
};

namespace {

// Reads model.json into `s`, opening the kernels and weights it names.
class ArtifactLoader {
public:
  ArtifactLoader(CompiledModel::State& s, const std::string& json_path) : s_(s), path_(json_path) {}

  void load(const json& m) {
    if (m.value("format", "") != "metatune-model")
      throw Error(path_ + ": not a metatune model artifact (format '" + m.value("format", "") +
                  "', expected 'metatune-model')");
    if (m.at("version").get<int>() != 1)
      throw Error(path_ + ": artifact version " + m.at("version").dump() +
                  " (this runtime reads version 1)");
    s_.model = m.value("model", "");
    for (const json& t : m.at("inputs"))
      s_.inputs.push_back(tensor_info(t));
    for (const json& t : m.at("outputs"))
      s_.outputs.push_back(tensor_info(t));
    s_.arena_bytes = m.at("arena_bytes").get<size_t>();
    s_.alignment = m.value("arena_alignment", size_t{64});
    const json& lib = m.at("library");
    check_calling_convention(lib);
    s_.library = std::make_unique<KernelLibrary>(file(m, "kernels"));
    s_.weights = std::make_unique<WeightsFile>(file(m, "weights"));
    std::map<std::string, const json*> kernels;
    for (const json& k : lib.at("kernels"))
      kernels[k.at("symbol").get<std::string>()] = &k;
    s_.num_kernels = kernels.size();
    for (const json& g : m.at("groups"))
      s_.calls.push_back(call(g, kernels));
  }

private:
  std::string file(const json& m, const char* key) const {
    return s_.dir + "/" + m.at(key).get<std::string>();
  }

  void check_calling_convention(const json& lib) const {
    std::string abi = lib.at("abi").get<std::string>();
    if (abi != "mt_llvm_kernel")
      throw Error(path_ + ": kernels use the calling convention '" + abi +
                  "'; this runtime calls 'mt_llvm_kernel'");
    const json& rt = lib.at("runtime");
    if (!rt.is_null() && (rt.at("kind").get<std::string>() != "mt_llvm_runtime" ||
                          rt.at("version").get<uint32_t>() > MT_LLVM_RUNTIME_VERSION))
      throw Error(path_ + ": kernels need the runtime services " + rt.dump() +
                  "; this runtime provides mt_llvm_runtime version " +
                  std::to_string(MT_LLVM_RUNTIME_VERSION));
  }

  Call call(const json& g, const std::map<std::string, const json*>& kernels) const {
    Call c;
    c.group = g.at("name").get<std::string>();
    c.symbol = g.at("kernel").get<std::string>();
    std::string what = "group '" + c.group + "'";
    auto k = kernels.find(c.symbol);
    if (k == kernels.end())
      throw Error(path_ + ": " + what + " calls kernel '" + c.symbol +
                  "', which the library descriptor does not list");
    c.fn = s_.library->kernel(c.symbol, "model.json " + what);
    const json& params = k->second->at("params");
    const json& args = g.at("args");
    if (args.size() != params.size())
      throw Error(path_ + ": " + what + " passes " + std::to_string(args.size()) +
                  " arguments to '" + c.symbol + "', which takes " + std::to_string(params.size()));
    for (size_t i = 0; i < args.size(); ++i)
      c.args.push_back(arg(args[i], params[i], what + " argument " + std::to_string(i)));
    return c;
  }

  Arg arg(const json& a, const json& param, const std::string& what) const {
    size_t want = param.at("bytes").get<size_t>();
    size_t bytes = a.at("bytes").get<size_t>();
    auto mismatch = [&](size_t have) {
      return Error(path_ + ": " + what + " ('" + param.value("name", "") + "') has " +
                   std::to_string(have) + " bytes, the kernel's parameter " + std::to_string(want));
    };
    if (bytes != want) throw mismatch(bytes);
    Arg r;
    if (a.contains("input") || a.contains("output")) {
      bool in = a.contains("input");
      r.kind = in ? Arg::Input : Arg::Output;
      r.index = a.at(in ? "input" : "output").get<size_t>();
      const auto& list = in ? s_.inputs : s_.outputs;
      if (r.index >= list.size())
        throw Error(path_ + ": " + what + " names " + (in ? "input " : "output ") +
                    std::to_string(r.index) + " of " + std::to_string(list.size()));
      if (list[r.index].bytes() != want) throw mismatch(list[r.index].bytes());
    } else if (a.contains("param")) {
      r.kind = Arg::Param;
      const WeightView& w =
          s_.weights->tensor(a.at("param").get<std::string>(), "model.json " + what);
      if (w.bytes != want) throw mismatch(w.bytes);
      r.param = w.data;
    } else if (a.contains("arena")) {
      r.kind = Arg::Arena;
      r.offset = a.at("arena").get<size_t>();
      if (r.offset + bytes > s_.arena_bytes)
        throw Error(path_ + ": " + what + " lies past the end of the arena (" +
                    std::to_string(s_.arena_bytes) + " bytes)");
    } else {
      throw Error(path_ + ": " + what + " is none of input, output, param, arena: " + a.dump());
    }
    return r;
  }

  CompiledModel::State& s_;
  std::string path_;
};

} // namespace

CompiledModel CompiledModel::load(const std::string& dir, const LoadOptions& options) {
  auto s = std::make_unique<State>();
  s->dir = dir;
  std::string path = dir + "/model.json";
  json m = read_json(path);
  try {
    ArtifactLoader(*s, path).load(m);
  } catch (const json::exception& e) {
    throw Error(path + ": " + e.what());
  }
  int threads = options.num_threads > 0 ? options.num_threads
                                        : static_cast<int>(std::thread::hardware_concurrency());
  s->pool = std::make_unique<ThreadPool>(threads);
  // operator new[] aligns only to max_align_t: over-allocate and align as the plan assumes.
  s->arena_storage = std::make_unique<std::byte[]>(s->arena_bytes + s->alignment);
  auto base = reinterpret_cast<uintptr_t>(s->arena_storage.get());
  s->arena = reinterpret_cast<std::byte*>((base + s->alignment - 1) / s->alignment * s->alignment);
  return CompiledModel(std::move(s));
}

CompiledModel::CompiledModel(std::unique_ptr<State> state) : s_(std::move(state)) {}
CompiledModel::CompiledModel(CompiledModel&&) noexcept = default;
CompiledModel& CompiledModel::operator=(CompiledModel&&) noexcept = default;
CompiledModel::~CompiledModel() = default;

const std::string& CompiledModel::model() const {
  return s_->model;
}
const std::vector<TensorInfo>& CompiledModel::inputs() const {
  return s_->inputs;
}
const std::vector<TensorInfo>& CompiledModel::outputs() const {
  return s_->outputs;
}
size_t CompiledModel::num_kernels() const {
  return s_->num_kernels;
}
size_t CompiledModel::num_groups() const {
  return s_->calls.size();
}
size_t CompiledModel::arena_bytes() const {
  return s_->arena_bytes;
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) {
  if (inputs.size() != s_->inputs.size())
    throw Error("the model takes " + std::to_string(s_->inputs.size()) + " inputs, " +
                std::to_string(inputs.size()) + " given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = s_->inputs[i];
    const TensorInfo& have = inputs[i].info();
    if (have.dtype != want.dtype || have.shape != want.shape)
      throw Error("input " + std::to_string(i) + " ('" + want.name + "'): expected " +
                  want.to_string() + ", got " + have.to_string());
  }
  std::vector<Tensor> outputs;
  for (const TensorInfo& t : s_->outputs)
    outputs.emplace_back(t);
  std::vector<void*> ptrs;
  for (const Call& c : s_->calls) {
    ptrs.clear();
    for (const Arg& a : c.args) {
      switch (a.kind) {
      case Arg::Input:
        ptrs.push_back(const_cast<void*>(inputs[a.index].data()));
        break;
      case Arg::Output:
        ptrs.push_back(outputs[a.index].data());
        break;
      case Arg::Param:
        ptrs.push_back(const_cast<void*>(a.param));
        break;
      case Arg::Arena:
        ptrs.push_back(s_->arena + a.offset);
        break;
      }
    }
    int32_t rc = c.fn(ptrs.data(), s_->pool->runtime());
    if (rc != MT_LLVM_OK)
      throw Error("kernel '" + c.symbol + "' (group '" + c.group + "') failed with code " +
                  std::to_string(rc) + (rc == MT_LLVM_ERR_ALLOC ? " (out of memory)" : ""));
  }
  return outputs;
}

std::vector<Tensor> CompiledModel::run(const std::vector<int32_t>& ids) {
  if (s_->inputs.size() != 1 || s_->inputs[0].dtype != "i32")
    throw Error("run(ids) is for a model with one i32 input; this one takes " +
                std::to_string(s_->inputs.size()) + " inputs");
  const TensorInfo& want = s_->inputs[0];
  if (static_cast<int64_t>(ids.size()) != want.num_elements())
    throw Error("input 0 ('" + want.name + "'): expected " + want.to_string() + " (" +
                std::to_string(want.num_elements()) + " token ids), got " +
                std::to_string(ids.size()) + " ids");
  Tensor in(want);
  std::memcpy(in.data(), ids.data(), ids.size() * sizeof(int32_t));
  return run(std::vector<Tensor>{std::move(in)});
}

} // namespace mt::rt
