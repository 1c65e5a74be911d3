#include "core/model/safetensors_dtype.h"

#include <array>

#include "core/support/check.h"

namespace mt {
namespace {

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char* name;
  size_t size;
};

constexpr std::array<DtypeInfo, 17> kDtypes = {{
    {SafetensorsDtype::BOOL, "BOOL", 1},
    {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::I8, "I8", 1},
    {SafetensorsDtype::F8_E5M2, "F8_E5M2", 1},
    {SafetensorsDtype::F8_E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::F8_E8M0, "F8_E8M0", 1},
    {SafetensorsDtype::I16, "I16", 2},
    {SafetensorsDtype::U16, "U16", 2},
    {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2},
    {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::U32, "U32", 4},
    {SafetensorsDtype::F32, "F32", 4},
    {SafetensorsDtype::C64, "C64", 8},
    {SafetensorsDtype::F64, "F64", 8},
    {SafetensorsDtype::I64, "I64", 8},
    {SafetensorsDtype::U64, "U64", 8},
}};

const DtypeInfo& info(SafetensorsDtype t) {
  const auto index = static_cast<size_t>(t);
  MT_ICHECK(index < kDtypes.size() && kDtypes[index].dtype == t, "safetensors dtype ", index,
            " outside its list");
  return kDtypes[index];
}

} // namespace

const char* to_string(SafetensorsDtype t) {
  return info(t).name;
}

size_t item_size(SafetensorsDtype t) {
  return info(t).size;
}

std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

bool is_sub_byte_safetensors_dtype(std::string_view name) {
  return name == "F4" || name == "F6_E2M3" || name == "F6_E3M2";
}

const char* safetensors_dtype_names() {
  return "BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, C64, F64, "
         "I64, U64";
}

} // namespace mt
