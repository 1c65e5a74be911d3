// The rewrite of the CUDA C++ the generator writes for the host's C++ compiler (the CUDA
// emulator, see ptx_emulator.h): each asm statement becomes a call to mt_emu::ptx, which carries
// out its PTX instruction; shared arrays come from the emulated shared memory, one place a
// declaration; each kernel gets an entry point `mt_emu_entry_<name>(void** params)` taking the
// driver's parameter array. The result includes cuda_builtins.h alone.
#pragma once

#include <string>

namespace mt::gpu_test::emulator {

// `cuda` rewritten. Throws std::runtime_error for a construct the rewrite does not know.
std::string cuda_to_cpp(const std::string& cuda);

} // namespace mt::gpu_test::emulator
