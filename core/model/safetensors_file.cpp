#include "core/model/safetensors_file.h"

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "core/model/convert_to_f32.h"
#include "core/model/safetensors_error.h"
#include "core/support/did_you_mean.h"

namespace mt {

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  MappedFile file;
  try {
    file = MappedFile(path);
  } catch (const std::invalid_argument& e) {
    throw SafetensorsError(path, "", e.what());
  }
  SafetensorsHeader header = parse_safetensors_header(file.bytes(), path);
  return SafetensorsFile(std::move(file), std::move(header));
}

SafetensorsFile::SafetensorsFile(MappedFile file, SafetensorsHeader header)
    : file_(std::move(file)), header_(std::move(header)) {
  for (size_t i = 0; i < header_.tensors.size(); ++i)
    index_.emplace(header_.tensors[i].name, i);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(header_.tensors.size());
  for (const SafetensorsTensorInfo& t : header_.tensors)
    out.push_back(t.name);
  return out;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const SafetensorsTensorInfo& SafetensorsFile::info(std::string_view name) const {
  if (const SafetensorsTensorInfo* t = find(name)) return *t;
  throw SafetensorsError(path(), std::string(name),
                         "no such tensor in the file (" + std::to_string(header_.tensors.size()) +
                             " tensors)" + did_you_mean(std::string(name), names()));
}

std::span<const std::byte> SafetensorsFile::bytes(std::string_view name) const {
  const SafetensorsTensorInfo& t = info(name);
  // The header validation put [begin, end) inside the data buffer, which is inside the file.
  return file_.bytes().subspan(static_cast<size_t>(header_.data_start() + t.begin),
                               static_cast<size_t>(t.nbytes()));
}

std::span<const float> SafetensorsFile::f32_view(std::string_view name) const {
  const SafetensorsTensorInfo& t = info(name);
  if (t.dtype != SafetensorsDtype::F32)
    throw SafetensorsError(path(), t.name,
                           std::string("f32_view of a ") + to_string(t.dtype) +
                               " tensor (only F32 is viewed in place; to_f32 converts)");
  std::span<const std::byte> b = bytes(name);
  if (reinterpret_cast<uintptr_t>(b.data()) % alignof(float) != 0)
    throw SafetensorsError(path(), t.name,
                           "its data starts at file offset " +
                               std::to_string(header_.data_start() + t.begin) +
                               ", not 4-byte aligned, so it cannot be viewed as f32 in place "
                               "(to_f32 copies it)");
  return {reinterpret_cast<const float*>(b.data()), static_cast<size_t>(t.num_elements)};
}

void SafetensorsFile::to_f32(std::string_view name, std::span<float> out) const {
  const SafetensorsTensorInfo& t = info(name);
  if (!converts_to_f32(t.dtype))
    throw SafetensorsError(path(), t.name,
                           std::string("dtype ") + to_string(t.dtype) + " does not convert to f32");
  if (out.size() != static_cast<size_t>(t.num_elements))
    throw SafetensorsError(path(), t.name,
                           "to_f32 into " + std::to_string(out.size()) + " floats, but it has " +
                               std::to_string(t.num_elements) + " elements");
  convert_to_f32(t.dtype, bytes(name), out);
}

std::vector<float> SafetensorsFile::to_f32(std::string_view name) const {
  std::vector<float> out(static_cast<size_t>(info(name).num_elements));
  to_f32(name, out);
  return out;
}

} // namespace mt
