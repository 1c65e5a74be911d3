// A tensor program: parameter buffers (inputs and outputs), intermediate buffers, and a body.
// Before lowering the body is a tree of loops and blocks; after lowering it is a loop program.
#pragma once

#include <string>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/stmt.h"

namespace mt {

struct Function {
  std::string name;
  std::vector<Buffer> params;   // order = calling convention
  std::vector<Buffer> buffers;  // intermediates, allocated for the whole call (pre-lowering)
  Stmt body;
  bool lowered = false;         // true once blocks are gone (output of lower())

  // Params written by some block / store; the others are read-only inputs.
  std::vector<bool> output_mask() const;
};

} // namespace mt
