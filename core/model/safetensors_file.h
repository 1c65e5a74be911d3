// A safetensors file opened for reading: memory-mapped read-only, its header validated once on
// open (core/model/safetensors_header.h), its tensors then read without copies (bytes(),
// f32_view()) or converted to f32 (to_f32()). Every error is a SafetensorsError naming the file
// and the tensor.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/safetensors_header.h"
#include "core/support/mapped_file.h"

namespace mt {

class SafetensorsFile {
public:
  // Maps and validates `path`; throws SafetensorsError (a missing or unreadable file included).
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const SafetensorsHeader& header() const { return header_; }
  // In the file's order (by data offset).
  const std::vector<SafetensorsTensorInfo>& tensors() const { return header_.tensors; }
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }

  // nullptr if the file has no tensor of that name.
  const SafetensorsTensorInfo* find(std::string_view name) const;
  // Throws SafetensorsError for a missing name, with the closest one the file has.
  const SafetensorsTensorInfo& info(std::string_view name) const;

  // The tensor's bytes inside the mapping (valid while this object lives), little-endian,
  // row-major, at whatever alignment the file gives them.
  std::span<const std::byte> bytes(std::string_view name) const;
  // An F32 tensor's elements inside the mapping. Throws for another dtype, or for data that
  // is not 4-byte aligned in the file (a writer that does not pad the header as the reference
  // does); to_f32() reads those.
  std::span<const float> f32_view(std::string_view name) const;
  // The elements converted to f32 (core/model/convert_to_f32.h) into `out`, which must hold
  // exactly num_elements of them; throws for C64, which has no f32 value.
  void to_f32(std::string_view name, std::span<float> out) const;
  std::vector<float> to_f32(std::string_view name) const;

private:
  SafetensorsFile(MappedFile file, SafetensorsHeader header);

  MappedFile file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

} // namespace mt
