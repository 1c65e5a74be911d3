// The error a safetensors file that cannot be read or written is reported with: a user error
// (docs/errors.md) whose message starts with the file's path and, where one is at fault, the
// tensor's name, then says what is wrong with the numbers involved.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mt {

class SafetensorsError : public std::invalid_argument {
public:
  // what(): "PATH: tensor 'NAME': WHY", or "PATH: WHY" when `tensor` is empty.
  SafetensorsError(std::string path, std::string tensor, const std::string& why);
  const std::string& path() const { return path_; }
  // The tensor at fault, or "" for a problem of the file as a whole.
  const std::string& tensor() const { return tensor_; }
  const std::string& why() const { return why_; }

private:
  std::string path_, tensor_, why_;
};

} // namespace mt
