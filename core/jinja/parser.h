// Tokens to the statement tree (ast.h), with Jinja's grammar and operator precedence:
// `if`/`elif`/`else`, `for ... in ... [if ...]` with `else`, `set` (also of a namespace's
// attribute, and as a block), `macro`, `break`/`continue`, `generation`, `filter`; expressions
// from the conditional `a if b else c` down to filters (`|`), tests (`is`), calls, attributes,
// subscripts and slices.
#pragma once

#include <vector>

#include "core/jinja/ast.h"
#include "core/jinja/lexer.h"

namespace mt::jinja {

// Throws TemplateError with the line of the first token it cannot place.
Body parse(const std::vector<Token>& tokens);

} // namespace mt::jinja
