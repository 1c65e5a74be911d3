// The one error a template raises: what went wrong and on which line of the template, whether
// parsing (a tag never closed, an unknown filter) or rendering (raise_exception's message, an
// undefined value used).
#pragma once

#include <stdexcept>
#include <string>

namespace mt::jinja {

class TemplateError : public std::runtime_error {
public:
  TemplateError(const std::string& message, int line)
      : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ": " + message : message),
        message_(message), line_(line) {}
  // The message without the line (raise_exception's text as the template wrote it).
  const std::string& message() const { return message_; }
  int line() const { return line_; }

private:
  std::string message_;
  int line_;
};

} // namespace mt::jinja
