// One graph of an artifact as the runtime runs it: its inputs and outputs, and its kernel calls
// in run order with where each argument lives (an input, an output, a parameter in the
// memory-mapped weights, an offset in the graph's own arena). model.json is one such graph;
// generation.json holds one per prefill bucket and decode capacity, sharing the kernels and
// the weights. Everything the graph's JSON says is checked when it is loaded -- argument
// counts and sizes against the kernel library's descriptor, arena bounds, symbols, tensors --
// so that running it checks nothing.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metatune/llvm_cpu/kernel_abi.h"
#include "metatune/runtime/compiled_model.h"

namespace mt::rt {

class KernelLibrary;
class PackedWeights;
class ThreadPool;
class WeightsFile;

size_t dtype_bytes(const std::string& dtype); // 0: not a dtype
TensorInfo tensor_info(const nlohmann::json& j);
// The file's JSON; `what` says what the file is, for the message when it is missing.
nlohmann::json read_json(const std::string& path, const char* what);

// What a graph's calls run against.
struct ProgramContext {
  const KernelLibrary* library = nullptr;
  const WeightsFile* weights = nullptr;
  std::map<std::string, const nlohmann::json*> kernels; // the descriptor's, by symbol
  // Weights some kernels read packed, made as the graphs are loaded (with the pool's threads).
  PackedWeights* packed = nullptr;
  const ThreadPool* pool = nullptr;
};

class Program {
public:
  // `g` has inputs, outputs, arena_bytes, groups (and optionally arena_alignment,
  // positions_input and each group's state_writes); `where` starts every message ("DIR/model.json",
  // "DIR/generation.json: graph 'decode@64'").
  Program(const nlohmann::json& g, const std::string& where, const ProgramContext& ctx);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  size_t num_calls() const { return calls_.size(); }
  size_t arena_bytes() const { return arena_bytes_; }

  // Runs the calls on buffers of inputs()' and outputs()' sizes, in their order.
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
           const ThreadPool& pool);

private:
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
  // A decode step's rows of a state (an output) written into its cache (an input) at the
  // positions of the positions input, before the call that first reads them (plugin ABI 1.9).
  struct StateWrite {
    size_t rows = 0, cache = 0;
  };

  Call call(const nlohmann::json& g, const ProgramContext& ctx) const;
  // `c` calling the kernel's variant that reads its weights packed, where the descriptor has
  // one and every weight it packs is a parameter here.
  void use_packed_variant(Call& c, const nlohmann::json& kernel, const ProgramContext& ctx) const;
  Arg arg(const nlohmann::json& a, const nlohmann::json& param, const std::string& what,
          const ProgramContext& ctx) const;
  std::vector<StateWrite> state_writes(const nlohmann::json& list, const std::string& what) const;
  void write_states(const std::vector<StateWrite>& writes, const std::vector<const void*>& inputs,
                    const std::vector<void*>& outputs) const;

  std::string where_;
  std::vector<TensorInfo> inputs_, outputs_;
  size_t arena_bytes_ = 0;
  std::vector<Call> calls_;
  std::vector<std::vector<StateWrite>> writes_; // before call i; the last: after the last call
  size_t positions_input_ = SIZE_MAX;
  std::unique_ptr<std::byte[]> arena_storage_;
  std::byte* arena_ = nullptr;
};

} // namespace mt::rt
