// The error a tokenizer file that cannot be used is reported with: a user error
// (docs/errors.md) whose message starts with the file's path, then names the field at fault
// (a JSON path such as "model.merges[12]", or "line 7" of a vocab.txt) and says what is wrong,
// e.g. "ckpt/tokenizer.json: pre_tokenizer 'Metaspace' is not supported (supported: ByteLevel)".
#pragma once

#include <stdexcept>
#include <string>

namespace mt::tok {

class TokenizerError : public std::invalid_argument {
public:
  // what(): "PATH: FIELD WHY", or "PATH: WHY" when `field` is empty.
  TokenizerError(std::string path, std::string field, const std::string& why);
  const std::string& path() const { return path_; }
  const std::string& field() const { return field_; }

private:
  std::string path_, field_;
};

} // namespace mt::tok
