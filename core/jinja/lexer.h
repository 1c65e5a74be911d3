// Template text to tokens: the text between tags, and the names, literals and operators inside
// {{ }} and {% %}. Whitespace control happens here, as in Jinja: `-` at a tag's edge strips
// the whitespace on that side, and with the options Hugging Face renders chat templates with
// (trim_blocks, lstrip_blocks) a block tag also takes the newline after it and the indentation
// before it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mt::jinja {

struct Token {
  enum class Kind {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    End
  };
  Kind kind;
  std::string text; // the text, a name, a string literal's value, a number's digits, an operator
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateError naming the line of an unclosed tag, string or comment.
std::vector<Token> lex(std::string_view source, const LexOptions& options = {});

} // namespace mt::jinja
