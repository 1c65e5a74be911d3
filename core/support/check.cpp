#include "core/support/check.h"

namespace mt {

namespace {

std::string describe(const std::string& file, int line, const std::string& condition,
                     const std::string& message) {
  std::string out = file + ":" + std::to_string(line) + ": internal error";
  if (!message.empty()) out += ": " + message;
  if (condition != "false") out += " (check '" + condition + "' failed)";
  return out + "; this is a bug in metatune, please report it";
}

} // namespace

InternalError::InternalError(std::string file, int line, std::string condition,
                             const std::string& message)
    : std::logic_error(describe(file, line, condition, message)), file_(std::move(file)),
      line_(line), condition_(std::move(condition)), message_(message) {}

namespace check_detail {

void fail(std::string file, int line, const char* condition, const std::string& message) {
  throw InternalError(std::move(file), line, condition, message);
}

} // namespace check_detail

} // namespace mt
