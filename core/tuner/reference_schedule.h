// The two schedules a tuning run gives the unscheduled workload: the tuning target's baseline
// (outer loops parallel), and the CPU schedule that computes a GPU run's reference results.
#pragma once

#include <memory>

#include "core/ir/function.h"
#include "core/schedule/schedule.h"

namespace mt {

// The outermost loop of every block parallel where that is legal (a data-parallel loop; the
// primitive refuses others and leaves the schedule as it was). Each output element is computed
// as in the unscheduled program, the threads sharing the elements. A CPU run's baseline trial
// and the schedule its references are computed with.
std::shared_ptr<Schedule> outer_loops_parallel(const Function& workload, uint64_t seed);

// For a kernel that runs without a record and without a library implementation (kernel
// selection's fallback): in each block the leading spatial loops fused into one parallel loop
// -- all of them but the innermost, which stays for the compiler to vectorise. The outermost
// loop alone is often the batch of 1. Each element is computed as in the unscheduled program.
std::shared_ptr<Schedule> spatial_loops_parallel(const Function& workload);

// outer_loops_parallel, and in each reduction block whose innermost loop walks an operand
// across its rows (matmul's B[k, j]) the reduction loops moved outside the innermost spatial
// loop, the initialisation split off before them, where that makes fewer accesses strided.
// Every output element still adds its terms in the same order as the unscheduled program;
// only the order of the elements changes, so that the innermost loop walks rows. The
// reference of a GPU run's large workloads (matmul 4096^3: ~2 GFLOPS with k innermost).
std::shared_ptr<Schedule> reference_schedule(const Function& workload);

} // namespace mt
