// The element types a safetensors file can name ("F32", "BF16", ...): their spelling in the
// header and their size in bytes. Sub-byte types (F4, F6_*) are recognised by name only, so
// that a file using them is refused with a message that says what it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mt {

// Listed in the order the reference implementation ranks them (increasing alignment, then
// width): the writer lays out tensors by decreasing rank, so every tensor starts aligned.
enum class SafetensorsDtype : uint8_t {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3, // float8_e4m3fn: no infinities, one NaN pattern per sign
  F8_E8M0, // float8_e8m0fnu: an exponent only (2^(e-127)), 0xFF is NaN
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64, // complex64: two f32 (real, imaginary)
  F64,
  I64,
  U64,
};

// The header's spelling: "F32", "BF16", "BOOL", ...
const char* to_string(SafetensorsDtype t);
size_t item_size(SafetensorsDtype t);
// The dtype a header names, or nullopt if metatune does not support it (including the known
// sub-byte types, see is_sub_byte_safetensors_dtype).
std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view name);
// True for the dtypes the format defines below one byte (F4, F6_E2M3, F6_E3M2), which metatune
// does not read.
bool is_sub_byte_safetensors_dtype(std::string_view name);
// Every supported spelling, comma-separated (for error messages).
const char* safetensors_dtype_names();

} // namespace mt
