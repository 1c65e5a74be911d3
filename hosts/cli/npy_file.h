// Writing an NDArray as a NumPy .npy file (format version 1.0, C order), so that a model's
// output can be compared with a Python reference (bench/model) without a converter.
#pragma once

#include <string>

#include "core/runtime/ndarray.h"

namespace mt::cli {

// f32, f64, i32 and i64 arrays; throws std::runtime_error naming the file on a write error.
void save_npy(const NDArray& a, const std::string& path);

} // namespace mt::cli
