// Whether a loop marked vectorized can run as lane-wise vector code without changing results.
// Vector code runs each statement of the body for all lanes before the next statement (and an
// inner loop's iterations for all lanes in turn), so every buffer the body writes must be
// accessed at one index pattern that is injective in the vector variable. A read-modify-write
// of a location that does not depend on the vector variable is a reduction: rejected.
#pragma once

#include <string>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

struct VectorPlan {
  bool vectorize = true;
  std::string reason; // why it falls back to a serial loop
};

// `loop` is a For node with ForKind::Vectorized. Throws CodegenError for reductions.
VectorPlan plan_vector_loop(const sdk::program::StmtNode& loop);

} // namespace mt::llvm_cpu
