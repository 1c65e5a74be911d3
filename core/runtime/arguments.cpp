#include "core/runtime/arguments.h"

#include <cmath>

namespace mt {

std::vector<NDArray> make_arguments(const Function& f, const ArgumentFill& fill) {
  std::vector<NDArray> args;
  std::vector<bool> is_output = f.output_mask();
  args.reserve(f.params.size());
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
    if (!is_output[i])
      args.back().fill_random(fill.seed * 0x9E3779B97F4A7C15ull + i, fill.lo, fill.hi);
    else if (fill.poison_outputs)
      poison(args.back());
  }
  return args;
}

void poison(NDArray& a) {
  a.fill(a.dtype().is_float() ? NAN : -77);
}

std::vector<NDArray*> pointers(std::vector<NDArray>& args) {
  std::vector<NDArray*> p;
  p.reserve(args.size());
  for (auto& a : args)
    p.push_back(&a);
  return p;
}

} // namespace mt
