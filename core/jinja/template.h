// A Jinja template, parsed once and rendered with variables: the engine behind a checkpoint's
// chat template (core/tokenizer/chat_template.h). It implements the Jinja that chat templates
// are written in -- statements, expressions, filters, tests and Python's str/dict methods as
// Jinja exposes them, with Python's printing of values -- and refuses the rest by name
// (docs/tokenizers.md#chat-templates lists what is there).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/jinja/ast.h"
#include "core/jinja/lexer.h"
#include "core/jinja/value.h"

namespace mt::jinja {

class Template {
public:
  // Throws TemplateError (with the line) where the source is not a template.
  explicit Template(std::string_view source, const LexOptions& options = {});

  // The text, with `variables` (and the globals range, namespace and dict) in scope. Throws
  // TemplateError with the line of the failing statement: an undefined value used, a type
  // error, or a message the template raised itself.
  // `max_steps` bounds the statements and loop iterations run: a template that would run
  // longer (loops in loops over big ranges) is stopped with an error; real chat templates
  // take thousands.
  static constexpr int64_t kDefaultMaxSteps = 10'000'000;
  std::string render(const Dict& variables, int64_t max_steps = kDefaultMaxSteps) const;

private:
  Body body_;
};

} // namespace mt::jinja
