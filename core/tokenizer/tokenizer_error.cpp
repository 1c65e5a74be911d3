#include "core/tokenizer/tokenizer_error.h"

#include <utility>

namespace mt::tok {

namespace {

std::string message(const std::string& path, const std::string& field, const std::string& why) {
  return path + ": " + (field.empty() ? why : field + " " + why);
}

} // namespace

TokenizerError::TokenizerError(std::string path, std::string field, const std::string& why)
    : std::invalid_argument(message(path, field, why)), path_(std::move(path)),
      field_(std::move(field)) {}

} // namespace mt::tok
