// CUDA architecture names ("sm_80", "sm_90a") as numbers, for the components that decide by
// them: the tensor-core rule (which WMMA shapes exist) and the cuda target (how much shared
// memory a block may opt into). One parser, so that both read a target's "arch" alike.
#pragma once

#include <charconv>
#include <string_view>

namespace mt::sdk {

// sm_80 -> 80, sm_90a -> 90 (a feature suffix is not part of the number); 0 for anything that
// is not "sm_" and digits.
inline int sm_version(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return 0;
  int sm = 0;
  auto [end, ec] = std::from_chars(arch.data() + 3, arch.data() + arch.size(), sm);
  if (ec != std::errc() || end == arch.data() + 3 || sm <= 0) return 0;
  return sm;
}

} // namespace mt::sdk
