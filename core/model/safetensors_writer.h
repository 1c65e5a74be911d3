// Writing safetensors files as the reference implementation does: tensors laid out by
// decreasing dtype alignment then by name, the JSON header compact and padded with spaces to a
// multiple of 8 bytes, so every tensor in the file starts aligned to its element size and the
// file reads back with SafetensorsFile (and with Hugging Face's own loaders). Used by tests and
// by benchmarks that need checkpoints with Hugging Face names and random weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/model/safetensors_dtype.h"

namespace mt {

// One tensor to write: its bytes are read, not owned (std::as_bytes(std::span(vec)) for a
// vector), little-endian, row-major, exactly num_elements(shape) x item_size(dtype) of them.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// The complete file as bytes. Throws SafetensorsError (naming "<memory>" as the file) for a
// duplicate name, the reserved name "__metadata__", a name or metadata text that is not valid
// UTF-8, a negative dimension, or data whose size does not match dtype x shape.
std::vector<std::byte>
serialize_safetensors(std::span<const SafetensorsTensor> tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Writes the file at `path` through a temporary file in the same folder that is flushed to
// disk and then renamed over `path`: an interrupted write leaves the old file (or none), never
// a partial one. Throws SafetensorsError naming `path` (the same checks, and I/O failures).
void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

} // namespace mt
