// KernelWriter: The names the source gives variables, buffers and temporaries, and how elements are
// typed, read, written and rounded (f16/bf16 held in float or in their own type).
#include "writer.h"

namespace mt::gpu_codegen::writer {

int64_t KernelWriter::held_bytes(P::DType t, bool own_type) const {
  if (is_half(t)) return own_type ? 2 : 4;
  if (t == P::DType::index()) return plan_.index32 ? 4 : 8;
  return t.kind == P::DTypeKind::Bool ? 1 : std::max<int64_t>(1, t.bits / 8);
}

std::string KernelWriter::sanitize(const std::string& s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

std::string KernelWriter::unique(const std::string& base, int64_t id,
                                 std::unordered_map<int64_t, std::string>& names) {
  auto it = names.find(id);
  if (it != names.end()) return it->second;
  std::string n = sanitize(base);
  if (taken_.count(n)) n += "_" + std::to_string(id);
  while (taken_.count(n))
    n += "_";
  taken_.insert(n);
  names[id] = n;
  return n;
}

std::string KernelWriter::fresh(const std::string& base) {
  std::string n = base + std::to_string(counter_++);
  taken_.insert(n);
  return n;
}

std::string KernelWriter::int_type(P::DType t) const {
  if (t == P::DType::index()) return idx_;
  return d_.type_name(t);
}

std::string KernelWriter::type_of(P::DType t) const {
  if (t.is_int() && t.bits == 64) return int_type(t);
  if (is_half(t)) return d_.type_name(P::DType::f32());
  return d_.type_name(t);
}

bool KernelWriter::held_in_own_type(const P::Buffer& b) const {
  return global_ids_.count(b->id) > 0 || fragment_memory_.count(b->id) > 0 ||
         (b->scope == "shared" && d_.holds_half_in_shared());
}

std::string KernelWriter::storage_type(const P::Buffer& b) const {
  if (!is_half(b->dtype)) return type_of(b->dtype);
  return b->scope == "shared" ? d_.shared_half_type(b->dtype) : d_.type_name(b->dtype);
}

std::string KernelWriter::read_element(const P::Buffer& b, const std::string& index) {
  std::string name = buffer_name(b);
  if (is_half(b->dtype) && held_in_own_type(b)) {
    if (b->dtype.kind == P::DTypeKind::BFloat) {
      used_helpers_.insert("mt_bf16_to_f32");
      return "mt_bf16_to_f32(" + name + "[" + index + "])";
    }
    used_helpers_.insert(kF16);
    return d_.load_f16(name, index, b->scope == "shared");
  }
  return name + "[" + index + "]";
}

std::string KernelWriter::write_element(const P::Buffer& b, const std::string& index,
                                        std::string value) {
  std::string name = buffer_name(b);
  if (is_half(b->dtype) && held_in_own_type(b)) {
    if (b->dtype.kind == P::DTypeKind::BFloat) {
      used_helpers_.insert("mt_f32_to_bf16");
      return name + "[" + index + "] = mt_f32_to_bf16(" + value + ")";
    }
    used_helpers_.insert(kF16);
    return d_.store_f16(name, index, value, b->scope == "shared");
  }
  if (b->dtype.is_bool()) value = "(" + d_.type_name(b->dtype) + ")(" + value + ")";
  return name + "[" + index + "] = " + value;
}

std::string KernelWriter::rounded(P::DType t, const std::string& x) {
  if (t.kind == P::DTypeKind::BFloat) {
    used_helpers_.insert("mt_round_bf16");
    return "mt_round_bf16(" + x + ")";
  }
  used_helpers_.insert(kF16);
  return d_.round_f16(x);
}

std::string KernelWriter::helper(const std::string& base, P::DType t) {
  std::string suffix = t.is_float()                       ? (t.bits == 64 ? "f64" : "f32")
                       : t.kind == P::DTypeKind::UInt     ? "u" + std::to_string(t.bits)
                       : (t.bits == 64 && !plan_.index32) ? "i64"
                       : t.bits == 64                     ? "i32"
                       : t.bits == 1                      ? "i32"
                                                          : "i" + std::to_string(t.bits);
  std::string name = "mt_" + base + "_" + suffix;
  used_helpers_.insert(name);
  return name;
}

std::string KernelWriter::float_literal(double v, P::DType t) {
  if (std::isnan(v)) return d_.nan(t);
  if (std::isinf(v)) return d_.infinity(t, v < 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return t.bits == 64 ? s : s + "f";
}

} // namespace mt::gpu_codegen::writer
