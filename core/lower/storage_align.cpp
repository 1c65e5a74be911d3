// storage_align at lowering: collecting the blocks' annotations and widening shapes (see
// storage_align.h).
#include "core/lower/storage_align.h"

#include <stdexcept>

namespace mt {

namespace {

const std::string kPrefix = "storage_align.";

int64_t parse_int(const std::string& s, const std::string& what) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) throw std::invalid_argument(what);
  return v;
}

void collect(const Stmt& s, StorageAligns& out) {
  if (!s) return;
  if (s->kind == StmtKind::BlockRealize) {
    const Block& b = *as<BlockRealizeNode>(s)->block;
    for (const auto& [key, value] : b.annotations) {
      if (key.rfind(kPrefix, 0) != 0) continue;
      std::string where = "block '" + b.name + "': annotation '" + key + "'";
      size_t dot = key.rfind('.');
      const auto* text = std::get_if<std::string>(&value);
      size_t colon = text ? text->find(':') : std::string::npos;
      if (dot < kPrefix.size() + 1 || colon == std::string::npos)
        throw std::invalid_argument(where + " is not storage_align.<buffer>.<axis> = "
                                            "\"<factor>:<offset>\"");
      StorageAlign a;
      a.axis = static_cast<int>(parse_int(key.substr(dot + 1), where + ": axis is not a number"));
      a.factor = parse_int(text->substr(0, colon), where + ": factor is not a number");
      a.offset = parse_int(text->substr(colon + 1), where + ": offset is not a number");
      if (a.axis < 0 || a.factor <= 0 || a.offset < 0 || a.offset >= a.factor)
        throw std::invalid_argument(where + ": need axis >= 0, factor > 0, 0 <= offset < factor");
      out[key.substr(kPrefix.size(), dot - kPrefix.size())].push_back(a);
    }
    collect(b.init, out);
    collect(b.body, out);
    return;
  }
  for (const Stmt& c : children(s))
    collect(c, out);
}

} // namespace

std::pair<std::string, std::string> storage_align_annotation(const std::string& buffer, int axis,
                                                             int64_t factor, int64_t offset) {
  return {kPrefix + buffer + "." + std::to_string(axis),
          std::to_string(factor) + ":" + std::to_string(offset)};
}

StorageAligns collect_storage_aligns(const Stmt& body) {
  StorageAligns out;
  collect(body, out);
  return out;
}

std::vector<int64_t> aligned_shape(std::vector<int64_t> shape,
                                   const std::vector<StorageAlign>& aligns) {
  for (const StorageAlign& a : aligns) {
    size_t inner = static_cast<size_t>(a.axis) + 1;
    if (inner >= shape.size()) continue;
    int64_t below = 1; // stride of dimension `inner`
    for (size_t d = inner + 1; d < shape.size(); ++d)
      below *= shape[d];
    for (int64_t e = shape[inner]; e < shape[inner] + a.factor; ++e)
      if ((e * below) % a.factor == a.offset) {
        shape[inner] = e;
        break;
      }
  }
  return shape;
}

} // namespace mt
