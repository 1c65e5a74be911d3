// A recognised Plan as oneDNN primitives: created once (engine cpu, one stream), run on the
// caller's tensors. Inputs and outputs are the caller's buffers seen through strided memory
// descriptors; where a primitive prefers another layout (convolutions pick blocked layouts)
// reorders to and from scratch memory run inside each call. Post-ops are fused when the
// primitive accepts them, else run as separate eltwise / binary primitives; a select's mask
// tables (select_mask.hpp) live in scratch memory, filled at build time or, for a mask read
// from a tensor, at the start of each call. A plan with several outputs is one primitive each.
// Weights that are the same at every call may be handed over packed (run_packed), in bf16
// with ModuleOptions::fpmath_bf16.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metatune/sdk/components.hpp"
#include "op_plan.hpp"
#include "stages.hpp"

namespace mt::onednn {

struct ModuleOptions {
  // Matmuls against packed weights compute in bf16 (oneDNN's fpmath mode bf16, done by hand
  // since oneDNN 2.6's f32 matmuls ignore the attribute): the weights packed in bf16, the
  // input rounded to bf16 before each call, products accumulated and written in f32. Plain
  // calls (weights not packed) stay f32, so the tuner's records of them are unchanged.
  bool fpmath_bf16 = false;
};

class DnnlModule : public sdk::Module {
public:
  DnnlModule(const Plan& plan, std::vector<P::Buffer> params, const ModuleOptions& options = {});
  ~DnnlModule() override;
  void run(const std::vector<sdk::TensorView>& args) override;
  // Prepacked weights (ABI 1.8): a matmul whose weights are a param is made a second time for
  // weights in oneDNN's own layout (format any); a caller that hands the weights over packed
  // runs that one, and the repacking inside every call is gone. A param read by anything else
  // as well is not packed.
  std::optional<PackedLayout> packed_layout(size_t param) override;
  void pack(size_t param, const void* src, void* dst) override;
  void run_packed(const std::vector<sdk::TensorView>& args,
                  const std::vector<uint8_t>& packed) override;
  // oneDNN's implementation of the main primitive (impl_info_str), plus how many reorders and
  // unfused steps each call runs.
  const std::string& implementation() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Thrown (as sdk::Error) when oneDNN refuses a recognised plan.
std::unique_ptr<DnnlModule> make_dnnl_module(const Plan& plan, std::vector<P::Buffer> params,
                                             const ModuleOptions& options = {});

} // namespace mt::onednn
