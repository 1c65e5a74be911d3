// libFuzzer target for the safetensors header parser (parse_safetensors_header,
// core/model/safetensors_header.h), fed whole files. Any input may be refused, but only with a
// SafetensorsError; a crash, leak, sanitizer report, hang or any other exception is a bug. An
// accepted file must keep the promises the parser makes (ranges tile the data buffer and match
// dtype x shape), convert to f32 without reading outside its tensors, and survive a write and
// re-read with the same tensors, bytes and metadata.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <vector>

#include "core/model/convert_to_f32.h"
#include "core/model/safetensors_error.h"
#include "core/model/safetensors_header.h"
#include "core/model/safetensors_writer.h"

namespace {

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}

void check_invariants(const mt::SafetensorsHeader& h, size_t file_size) {
  if (h.data_start() + h.data_size != file_size) bug("header + data do not add up to the file");
  uint64_t covered = 0;
  for (const mt::SafetensorsTensorInfo& t : h.tensors) {
    if (t.begin != covered || t.end < t.begin) bug("accepted ranges do not tile the buffer");
    if (t.nbytes() != static_cast<uint64_t>(t.num_elements) * mt::item_size(t.dtype))
      bug("accepted a range that does not match dtype x shape");
    covered = t.end;
  }
  if (covered != h.data_size) bug("accepted a buffer with bytes outside every tensor");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  mt::SafetensorsHeader header;
  try {
    header = mt::parse_safetensors_header(file, "fuzz-input");
  } catch (const mt::SafetensorsError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_safetensors: refused with %s instead of a SafetensorsError\n",
                 e.what());
    std::abort();
  }
  check_invariants(header, size);

  std::vector<mt::SafetensorsTensor> tensors;
  for (const mt::SafetensorsTensorInfo& t : header.tensors) {
    auto bytes = file.subspan(header.data_start() + t.begin, t.nbytes());
    if (mt::converts_to_f32(t.dtype)) {
      std::vector<float> values(static_cast<size_t>(t.num_elements));
      mt::convert_to_f32(t.dtype, bytes, values);
    }
    tensors.push_back({t.name, t.dtype, t.shape, bytes});
  }

  std::vector<std::byte> again;
  mt::SafetensorsHeader reread;
  try {
    again = mt::serialize_safetensors(tensors, header.metadata);
    reread = mt::parse_safetensors_header(again, "fuzz-rewrite");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_safetensors: an accepted file does not write back: %s\n", e.what());
    std::abort();
  }
  if (reread.metadata != header.metadata) bug("metadata differs after a rewrite");
  if (reread.tensors.size() != header.tensors.size()) bug("tensor count differs after a rewrite");
  for (const mt::SafetensorsTensorInfo& r : reread.tensors) {
    const mt::SafetensorsTensor* original = nullptr;
    for (const mt::SafetensorsTensor& t : tensors)
      if (t.name == r.name) original = &t;
    if (!original || original->dtype != r.dtype || original->shape != r.shape)
      bug("a tensor differs after a rewrite");
    auto bytes =
        std::span<const std::byte>(again).subspan(reread.data_start() + r.begin, r.nbytes());
    if (!std::equal(bytes.begin(), bytes.end(), original->data.begin(), original->data.end()))
      bug("tensor data differs after a rewrite");
  }
  return 0;
}
