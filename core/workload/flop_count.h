// Floating-point work of a tensor program, for reporting speed as GFLOPS: the arithmetic
// operations of every stored value (on float data, or on integer data narrower than the index
// type) times the number of times the store runs, counted on the unscheduled function.
#pragma once

#include "core/ir/function.h"

namespace mt {

// Operations per call of `f`. Counts Add, Sub, Mul, Div, Min, Max and math calls on data
// values (index arithmetic is not counted), each store weighted by the extents of the loops
// around it; a reduction's init is not counted, and of the two branches of a condition the
// costlier one is. matmul(M,N,K) counts 2*M*N*K.
double count_flops(const Function& f);

} // namespace mt
