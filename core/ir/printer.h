// Text form of the tensor IR: a readable, exactly round-tripping rendering of functions,
// statements and expressions (grammar in docs/ir_text_format.md; the parser is parser.h).
// The canonical variant renames variables/buffers by order of definition and drops the
// function name, so alpha-equivalent functions print identically (structural.h hashes it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/ir/dtype.h"
#include "core/ir/expr.h"
#include "core/ir/function.h"
#include "core/ir/stmt.h"

namespace mt {

struct PrintOptions {
  // Variables become v0, v1, ... and buffers b0, b1, ... in order of definition, the function
  // is printed as `f`, and free variables/buffers of a statement or expression are declared in
  // a header. Block names, annotations and everything else are kept.
  bool canonical = false;
};

// Never throws on malformed IR (null nodes, wrong operand counts, ...): such parts print in
// a form the parser rejects, so debugging output is always available.
std::string print(const Function& f, const PrintOptions& options = {});
std::string print(const Stmt& s, const PrintOptions& options = {});
std::string print(const Expr& e, const PrintOptions& options = {});

// A 61-bit digest of print(f, {.canonical = true}), computed without building the text: a
// subexpression with several parents costs one digest however often the text repeats it.
// Equal texts give equal digests; different texts collide with a chance of about
// length / 2^61. (structural_fingerprint, structural.h.)
uint64_t canonical_digest(const Function& f);

// Lexical pieces of the text format, shared by printer and parser.
namespace ir_text {

// "f32", "bf16", "i8", "u32", "bool" (1 bit), "bool8" (other bool widths), ...
std::string dtype_name(DType t);
std::optional<DType> parse_dtype_name(std::string_view s);
// Words that never name a variable or buffer unquoted (keywords, dtype names, math functions).
bool is_reserved_word(std::string_view s);
// [A-Za-z_][A-Za-z0-9_.]* and not reserved.
bool is_plain_name(std::string_view s);
// Double-quoted with \" \\ \n \t \r and \xHH escapes for other bytes outside 0x20..0x7e.
std::string quote(std::string_view s);
// `s` as is when it is a plain name, quoted otherwise.
std::string name_token(std::string_view s);
// The type the text form implies for `n` (from its operands, literal suffix, buffer, ...).
// Nodes whose stored type differs are printed with an ascription `(e : dtype)`.
DType natural_dtype(const ExprNode& n);
// Shortest decimal text that reads back as exactly `v` (no sign handling for inf/nan).
std::string shortest_double(double v);

} // namespace ir_text

} // namespace mt
