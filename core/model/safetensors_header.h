// The header of a safetensors file, parsed and validated (the format: huggingface/safetensors,
// README "Format"): an 8-byte little-endian length N, N bytes of UTF-8 JSON naming each
// tensor's dtype, shape and [begin, end) byte range in the data buffer that follows, and an
// optional "__metadata__" object of strings. Everything a later read relies on is checked here,
// so that reading a tensor of an accepted header never leaves the file: the ranges fit the
// buffer, match dtype x shape, and tile the buffer exactly (no overlap, no hole), as the spec
// requires. Any input, however truncated or lying, gives a SafetensorsError, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/model/safetensors_dtype.h"

namespace mt {

// The largest header accepted, as the reference implementation limits it: a bigger one is a
// corrupt length or an attempt to make the parser allocate without bound.
inline constexpr uint64_t kSafetensorsMaxHeaderSize = 100'000'000;

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape; // row-major; [] is a scalar
  int64_t num_elements = 1;
  // data_offsets, relative to the start of the data buffer (not of the file).
  uint64_t begin = 0, end = 0;
  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  uint64_t header_size = 0; // N: the JSON text's length in bytes, padding included
  uint64_t data_size = 0;   // the data buffer: everything after the header
  // Ordered by data offset (the file's layout), not by the order of the JSON keys.
  std::vector<SafetensorsTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  // Where the data buffer starts in the file.
  uint64_t data_start() const { return 8 + header_size; }
};

// Parses and validates the header of the safetensors file whose complete contents are `file`;
// `path` only names the file in error messages. Throws SafetensorsError.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           const std::string& path);

} // namespace mt
