// UTF-8 validation for text read from files (a safetensors header, a JSON config): where the
// first ill-formed sequence starts, so that an error message can point at it.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mt {

// The byte offset of the first ill-formed UTF-8 sequence in `text` (RFC 3629: no overlong
// forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequence), or
// nullopt if all of `text` is well-formed.
std::optional<size_t> first_invalid_utf8(std::string_view text);

} // namespace mt
