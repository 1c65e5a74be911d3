#include "core/ir/dtype.h"

namespace mt {

const char* to_string(DTypeKind k) {
  const char* text = mt_dtype_code_text(to_dtype_code(k));
  return text ? text : "?";
}

mt_dtype_code to_dtype_code(DTypeKind k) {
  return mt_dtype_code_at(static_cast<int>(k));
}

std::optional<DTypeKind> from_dtype_code(mt_dtype_code code) {
  int position = mt_dtype_code_position(code);
  if (position < 0) return std::nullopt;
  return static_cast<DTypeKind>(position);
}

std::string to_string(DType t) {
  if (t.kind == DTypeKind::Bool) return to_string(t.kind);
  return to_string(t.kind) + std::to_string(t.bits);
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
