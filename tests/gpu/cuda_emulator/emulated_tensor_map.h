// A TMA tensor map as the CUDA emulator encodes it in CUtensorMap's 128 opaque bytes: what
// run_on_emulator.cpp writes from the generator's TensorMapSpec and ptx_emulator.h's
// cp.async.bulk.tensor reads.
#pragma once

#include <cstdint>

namespace mt_emu {

struct EmulatedTensorMap {
  uint64_t magic = 0x6d742d746d617021ull;
  const unsigned char* base = nullptr;
  int rank = 0, element_bytes = 2, swizzle_bytes = 0;
  uint64_t dims[4] = {};    // innermost first (rank 4 at most)
  uint64_t strides[4] = {}; // bytes between steps of dims 1.. (strides[0] unused)
  uint32_t box[4] = {};
};
static_assert(sizeof(EmulatedTensorMap) <= 128);

} // namespace mt_emu
