// Element types of tensor IR values and buffers: kind + bit width (scalars only; vector
// lanes are a code-generation concern, not an IR one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metatune/plugin_api/ir_vocabulary.h"

namespace mt {

// Int, UInt, Float, BFloat, Bool: numbered by position in the ABI's list (files store that
// number); the ABI's DLPack code is to_dtype_code / from_dtype_code.
enum class DTypeKind : uint8_t { MT_DTYPE_KINDS(MT_VOCAB_POSITIONAL_ENUMERATOR) };

struct DType {
  DTypeKind kind = DTypeKind::Float;
  uint8_t bits = 32;

  constexpr bool is_float() const { return kind == DTypeKind::Float || kind == DTypeKind::BFloat; }
  constexpr bool is_int() const { return kind == DTypeKind::Int || kind == DTypeKind::UInt; }
  constexpr bool is_bool() const { return kind == DTypeKind::Bool; }
  constexpr int bytes() const { return bits <= 8 ? 1 : bits / 8; }
  friend constexpr bool operator==(DType a, DType b) { return a.kind == b.kind && a.bits == b.bits; }

  static constexpr DType f32() { return {DTypeKind::Float, 32}; }
  static constexpr DType f64() { return {DTypeKind::Float, 64}; }
  static constexpr DType f16() { return {DTypeKind::Float, 16}; }
  static constexpr DType bf16() { return {DTypeKind::BFloat, 16}; }
  static constexpr DType i8() { return {DTypeKind::Int, 8}; }
  static constexpr DType u8() { return {DTypeKind::UInt, 8}; }
  static constexpr DType i32() { return {DTypeKind::Int, 32}; }
  static constexpr DType i64() { return {DTypeKind::Int, 64}; }
  static constexpr DType boolean() { return {DTypeKind::Bool, 1}; }
  // Index arithmetic (loop variables, buffer indices) is always i64.
  static constexpr DType index() { return i64(); }
};

// "f32", "bf16", "i8", "u8", "bool", ...
std::string to_string(DType t);
// The name prefix of a kind: "i", "u", "f", "bf", "bool".
const char* to_string(DTypeKind k);
mt_dtype_code to_dtype_code(DTypeKind k);
std::optional<DTypeKind> from_dtype_code(mt_dtype_code code);
std::optional<DType> parse_dtype(std::string_view s);

} // namespace mt
