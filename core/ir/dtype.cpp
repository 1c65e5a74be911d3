#include "core/ir/dtype.h"

namespace mt {

std::string to_string(DType t) {
  switch (t.kind) {
  case DTypeKind::Int: return "i" + std::to_string(t.bits);
  case DTypeKind::UInt: return "u" + std::to_string(t.bits);
  case DTypeKind::Float: return "f" + std::to_string(t.bits);
  case DTypeKind::BFloat: return "bf" + std::to_string(t.bits);
  case DTypeKind::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  static const DType all[] = {DType::f32(), DType::f64(), DType::f16(), DType::bf16(),
                              DType::i8(),  DType::u8(),  DType::i32(), DType::i64(),
                              DType::boolean(), DType{DTypeKind::Int, 16},
                              DType{DTypeKind::UInt, 32}};
  for (DType t : all)
    if (to_string(t) == s) return t;
  return std::nullopt;
}

} // namespace mt
