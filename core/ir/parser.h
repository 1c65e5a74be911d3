// Parser for the IR text form written by printer.h (grammar in docs/ir_text_format.md).
// parse_function(print(f)) rebuilds f exactly: the result prints identically and is
// structurally equal. Malformed or ill-typed input raises ParseError with a source location;
// nesting is bounded, so no input can exhaust the stack.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "core/ir/function.h"

namespace mt {

class ParseError : public std::runtime_error {
public:
  // what() reads "<source>:<line>:<column>: error: <message>" (1-based line and byte column).
  ParseError(std::string_view source, int line, int column, const std::string& message);

  const std::string& source_name() const { return source_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

private:
  std::string source_;
  int line_;
  int column_;
  std::string message_;
};

// Limits that keep the recursive-descent parser and later tree walks on a small stack.
inline constexpr int kMaxParseNesting = 256;     // braces, parentheses, unary operators
inline constexpr int kMaxParsedExprDepth = 1024; // depth of one expression tree

Function parse_function(std::string_view text, std::string_view source_name = "<input>");

} // namespace mt
