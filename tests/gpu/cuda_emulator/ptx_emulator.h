// The run-time side of the CUDA emulator (run_on_emulator.h): the generated CUDA C++, after
// cuda_to_cpp's rewrite, is compiled by the host's C++ compiler with cuda_builtins.h and run
// on the CPU by this (ptx_emulator.cpp, in the test binary). Every thread of a block is a fiber
// (ucontext) on one OS thread; a fiber runs until it has to wait (a barrier, an mbarrier phase not
// complete), so the order in which threads meet is the scheduler's, drawn from a seed. Each PTX
// instruction the generator writes is carried out here from the PTX ISA's definition:
//   - mbarrier: arrivals, transaction bytes, phases and try_wait.parity;
//   - cp.async.bulk.tensor (TMA): a box of the tensor map copied into shared memory with the
//     128-byte swizzle applied to the shared address, out-of-bounds elements zero, the bytes
//     completed on the mbarrier; the copy lands at a moment the scheduler draws, never before
//     it is issued and always before anyone could only wait for it;
//   - cp.async (per thread): done when a wait_group retires its group, not before;
//   - wgmma.mma_async: each thread's accumulator fragment from the shared tiles the
//     descriptors address (core matrices, or the 128-byte swizzle). A committed group is the
//     warpgroup's: it completes for all 128 threads at once, when a wait_group first needs it
//     and every thread has issued it (until then that wait waits). The product is taken when a
//     thread issues and again at completion, and the two must agree: shared memory an
//     in-flight wgmma reads must not change. Registers change only at completion, so reading
//     them earlier reads stale values;
//   - bar.sync / __syncthreads: all the threads the barrier counts meet.
// Errors -- a deadlock (every thread waits and nothing can complete), a trap, an address
// outside shared memory, an instruction this file does not know -- stop the launch with a
// message naming the block and thread. Shared memory starts as 0xFF bytes (NaN), so that a read
// of what was never written shows in the results.
//
//   - fence.proxy.async: a thread's cp.async writes are visible to wgmma's reads (the
//     asynchronous proxy) only after the thread's fence; a wgmma that reads one before is
//     reported. (Plain stores to shared memory are not tracked.)
// Not modelled: warps (threads of a warp may diverge freely here), memory ordering beyond the
// instructions' own completion (the other fences are no-ops), timing. The descriptors' and the
// swizzle's reading is the PTX ISA's as the generator also reads it: it is checked on a device by
// tests/gpu/wgmma_probe_test.cpp, not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mt_emu {

struct LaunchStats {
  uint64_t ptx = 0, tma_copies = 0, wgmmas = 0, max_tma_in_flight = 0;
};

// Runs `entry` (a rewritten kernel's entry point, taking cuLaunchKernel's parameter array) on
// every thread of every block of the grid, the blocks one after the other; "" or the error,
// which names the block and thread. `seed` draws the order of the threads and of the copies'
// landing.
std::string run_grid(void (*entry)(void**), void** params, const unsigned grid[3],
                     const unsigned block[3], size_t dynamic_shared_bytes, uint64_t seed,
                     LaunchStats* stats);

} // namespace mt_emu
