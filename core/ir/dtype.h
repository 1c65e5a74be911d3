// Element types of tensor IR values and buffers: kind + bit width (scalars only; vector
// lanes are a code-generation concern, not an IR one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mt {

enum class DTypeKind : uint8_t { Int, UInt, Float, BFloat, Bool };

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
std::optional<DType> parse_dtype(std::string_view s);

} // namespace mt
