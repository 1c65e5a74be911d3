// Widening (or narrowing) the elements of a tensor stored in a safetensors dtype into f32, the
// type metatune computes weights in: exact for every f16, bf16 and f8 value (subnormals,
// infinities and NaN included; a NaN keeps its sign and payload, quieted), f64 rounded to
// nearest, integers converted as static_cast does, BOOL as 0/1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/model/safetensors_dtype.h"

namespace mt {

float f16_bits_to_f32(uint16_t h);
float bf16_bits_to_f32(uint16_t h);
float f8_e5m2_bits_to_f32(uint8_t b);
float f8_e4m3_bits_to_f32(uint8_t b); // float8_e4m3fn
float f8_e8m0_bits_to_f32(uint8_t b); // float8_e8m0fnu

// False for the dtypes that have no f32 value (C64).
bool converts_to_f32(SafetensorsDtype t);

// Converts the little-endian elements in `src` (any alignment) into `dst`, which must hold
// exactly src.size() / item_size(t) elements. Throws std::invalid_argument for a dtype that
// does not convert or sizes that do not match (callers check both first; the message then only
// has to say which).
void convert_to_f32(SafetensorsDtype t, std::span<const std::byte> src, std::span<float> dst);

} // namespace mt
