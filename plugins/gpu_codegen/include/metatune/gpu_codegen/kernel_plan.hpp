// A lowered program as a GPU runs it: device buffers (the parameters, then the global
// temporaries), kernels (each a statement of the program with its launch dimensions) and the
// host steps that launch them in order. A kernel starts at the outermost thread-bound loop of
// a nest; the serial loops above it stay on the host (the kernel gets their variables as
// scalar arguments); a statement with no thread binding at all runs as a one-thread kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::gpu_codegen {

namespace P = mt::sdk::program;

// A program the generator cannot express on a GPU (the candidate is refused, not wrong).
class UnsupportedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct LaunchDims {
  int64_t grid[3] = {1, 1, 1};  // blocks per blockIdx.x/y/z
  int64_t block[3] = {1, 1, 1}; // threads per threadIdx.x/y/z
  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

struct Kernel {
  std::string name;
  P::Stmt body;                   // the statement the kernel runs
  LaunchDims dims;                // largest extent bound to each tag
  std::vector<P::Expr> host_vars; // host loop variables it reads, passed as i64 scalars
};

// A launch (kernel >= 0) or a host loop over `body`.
struct HostStep {
  int kernel = -1;
  P::Expr loop_var;
  int64_t extent = 0;
  std::vector<HostStep> body;
};

struct KernelPlan {
  std::string name;
  std::vector<P::Buffer> buffers; // device buffers: params (in order), then temporaries
  size_t num_params = 0;
  std::vector<Kernel> kernels;
  std::vector<HostStep> steps;
  // Every buffer is small enough for 32-bit index arithmetic (GPUs are much faster at it).
  bool index32 = true;
};

// Thread tags: "blockIdx.x" -> (true, 0), "threadIdx.z" -> (false, 2); false for others.
bool parse_thread_tag(const std::string& tag, bool* is_block, int* dim);

KernelPlan plan_kernels(const P::Program& program);

// Runs the host steps: `launch(kernel, values of its host_vars)` for every launch, in order.
void run_host_steps(const KernelPlan& plan,
                    const std::function<void(int, const std::vector<int64_t>&)>& launch);

} // namespace mt::gpu_codegen
