// A recognised Plan as oneDNN primitives: created once (engine cpu, one stream), run on the
// caller's tensors. Inputs and outputs are the caller's buffers seen through strided memory
// descriptors; where a primitive prefers another layout (convolutions pick blocked layouts)
// reorders to and from scratch memory run inside each call. Post-ops are fused when the
// primitive accepts them, else run as separate eltwise / binary primitives; a select's mask
// tables (select_mask.hpp) live in scratch memory, filled at build time or, for a mask read
// from a tensor, at the start of each call. A plan with several outputs is one primitive each.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "metatune/sdk/components.hpp"
#include "op_plan.hpp"
#include "stages.hpp"

namespace mt::onednn {

class DnnlModule : public sdk::Module {
public:
  DnnlModule(const Plan& plan, std::vector<P::Buffer> params);
  ~DnnlModule() override;
  void run(const std::vector<sdk::TensorView>& args) override;
  // oneDNN's implementation of the main primitive (impl_info_str), plus how many reorders and
  // unfused steps each call runs.
  const std::string& implementation() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Thrown (as sdk::Error) when oneDNN refuses a recognised plan.
std::unique_ptr<DnnlModule> make_dnnl_module(const Plan& plan, std::vector<P::Buffer> params);

} // namespace mt::onednn
