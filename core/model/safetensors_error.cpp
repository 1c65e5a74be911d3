#include "core/model/safetensors_error.h"

namespace mt {
namespace {

std::string compose(const std::string& path, const std::string& tensor, const std::string& why) {
  std::string s = path + ": ";
  if (!tensor.empty()) s += "tensor '" + tensor + "': ";
  return s + why;
}

} // namespace

SafetensorsError::SafetensorsError(std::string path, std::string tensor, const std::string& why)
    : std::invalid_argument(compose(path, tensor, why)), path_(std::move(path)),
      tensor_(std::move(tensor)), why_(why) {}

} // namespace mt
