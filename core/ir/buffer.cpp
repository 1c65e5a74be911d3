#include "core/ir/buffer.h"

namespace mt {

Buffer make_buffer(std::string name, DType dtype, std::vector<int64_t> shape, std::string scope) {
  auto b = std::make_shared<BufferNode>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = std::move(scope);
  return b;
}

Buffer with_scope(const Buffer& b, std::string scope) {
  return make_buffer(b->name, b->dtype, b->shape, std::move(scope));
}

} // namespace mt
