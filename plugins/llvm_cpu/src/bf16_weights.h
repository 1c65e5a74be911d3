// Weights kept in bf16 (the target's -fpmath=bf16): a program's f32 input read as a product's
// operand -- a matmul's or convolution's weights, also through a copy into a local buffer that
// a tiled schedule makes of them -- may be handed over in bf16, half the bytes; the kernel
// then loads bf16 and widens it to f32 (exact), so only the weights' own rounding changes the
// result. The host says which params are weights (it packs model parameters only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

// Per param: whether it may be stored in bf16. An f32 input of two or more dimensions whose
// every load is an operand of a multiplication, or the whole value copied into an allocated
// buffer whose every load is; never one read at a data-dependent index (an embedding table's
// gather: its rows are read once, there is nothing to gain).
std::vector<bool> bf16_weight_candidates(const sdk::program::Program& p);

// `p` with the params flagged in `bf16` declared bf16: every load of them reads bf16 memory.
sdk::program::Program with_bf16_params(const sdk::program::Program& p,
                                       const std::vector<uint8_t>& bf16);

// `n` f32 values rounded to nearest even into bf16 bits (NaN stays a quiet NaN), as the
// generated code rounds an f32 stored to a bf16 buffer.
void round_to_bf16(const float* src, uint16_t* dst, size_t n);

} // namespace mt::llvm_cpu
