// The helper functions a kernel may call (floor division, NaN-propagating min/max, bf16
// conversions), spelled for the dialect.
#include "writer.h"

namespace mt::gpu_codegen::writer {

std::map<std::string, std::string> helpers(const Dialect& d, bool index32) {
  const std::string q = d.helper_qualifier() + " ";
  std::map<std::string, std::string> out;
  auto ints = [&](const std::string& suffix, const std::string& t) {
    auto fn = [&](const std::string& base, const std::string& params, const std::string& body) {
      std::string name = "mt_" + base + "_" + suffix;
      out[name] = q + t + " " + name + "(" + params + ") { " + body + " }\n";
    };
    std::string ab = t + " a, " + t + " b";
    fn("floordiv", ab, t + " q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;");
    fn("floormod", ab, t + " r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;");
    fn("min", ab, "return b < a ? b : a;");
    fn("max", ab, "return b > a ? b : a;");
    fn("abs", t + " a", "return a < 0 ? -a : a;");
  };
  // Unsigned: C's division and remainder are already floor ones.
  auto uints = [&](const std::string& suffix, const std::string& t) {
    auto fn = [&](const std::string& base, const std::string& params, const std::string& body) {
      std::string name = "mt_" + base + "_" + suffix;
      out[name] = q + t + " " + name + "(" + params + ") { " + body + " }\n";
    };
    std::string ab = t + " a, " + t + " b";
    fn("floordiv", ab, "return a / b;");
    fn("floormod", ab, "return a % b;");
    fn("min", ab, "return b < a ? b : a;");
    fn("max", ab, "return b > a ? b : a;");
    fn("abs", t + " a", "return a;");
  };
  for (int bits : {8, 16, 32, 64})
    uints("u" + std::to_string(bits),
          d.type_name(P::DType{P::DTypeKind::UInt, static_cast<uint8_t>(bits)}));
  ints("i8", d.type_name(P::DType::i8()));
  ints("i16", d.type_name(P::DType::i16()));
  ints("i32", d.type_name(P::DType::i32()));
  if (!index32) ints("i64", d.int64_type());
  for (auto [suffix, t] : {std::pair{"f32", P::DType::f32()}, std::pair{"f64", P::DType::f64()}}) {
    std::string ty = d.type_name(t);
    // NaN propagates, as in the reference interpreter: a read of unwritten (NaN) memory shows.
    for (auto [base, op] : {std::pair{"min", "<"}, std::pair{"max", ">"}}) {
      std::string name = std::string("mt_") + base + "_" + suffix;
      out[name] = q + ty + " " + name + "(" + ty + " a, " + ty + " b) { return (" + d.is_nan("a") +
                  " || " + d.is_nan("b") + ") ? " + d.nan(t) + " : (b " + op + " a ? b : a); }\n";
    }
  }
  // bf16 is the upper half of a float: conversions by bits, rounding to nearest even.
  std::string u16 = d.type_name(P::DType{P::DTypeKind::UInt, 16});
  std::string u32 = d.type_name(P::DType{P::DTypeKind::UInt, 32});
  std::string f32 = d.type_name(P::DType::f32());
  out["mt_bf16_to_f32"] = q + f32 + " mt_bf16_to_f32(" + u16 + " b) { return " +
                          d.bits_float("((" + u32 + ")b) << 16") + "; }\n";
  out["mt_f32_to_bf16"] =
      q + u16 + " mt_f32_to_bf16(" + f32 + " f) { " + u32 + " u = " + d.float_bits("f") +
      "; if ((u & 0x7fffffffu) > 0x7f800000u) return (" + u16 +
      ")((u >> 16) | 0x40u); u += 0x7fffu + ((u >> 16) & 1u); return (" + u16 + ")(u >> 16); }\n";
  out["mt_round_bf16"] =
      q + f32 + " mt_round_bf16(" + f32 + " f) { return mt_bf16_to_f32(mt_f32_to_bf16(f)); }\n";
  return out;
}

} // namespace mt::gpu_codegen::writer
