#include "core/model/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/model/safetensors_error.h"
#include "core/support/utf8.h"

namespace mt {
namespace {

using nlohmann::json;

// A valid header nests three levels (root, tensor entry, shape); the margin leaves room for
// fields the format may add, while a pathological nesting stops early with a clear message.
constexpr int kMaxNesting = 64;

// A JSON value as a message quotes it: short, on one line.
std::string quote_value(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// "a string", "an array", ... for "X is a string, not an integer".
std::string kind_of(const json& v) {
  if (v.is_number_float()) return "the number " + quote_value(v);
  if (v.is_number()) return "the integer " + quote_value(v);
  if (v.is_string()) return "the string " + quote_value(v);
  if (v.is_boolean()) return quote_value(v);
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::string format_range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Rejects duplicate keys (the spec forbids them; nlohmann would keep the last silently) and
// nesting beyond kMaxNesting while the text is parsed, naming the tensor a duplicate is in.
class JsonShapeGuard {
public:
  explicit JsonShapeGuard(const std::string& path) : path_(path) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      if (frames_.size() >= kMaxNesting)
        throw SafetensorsError(path_, "",
                               "header nests JSON deeper than " + std::to_string(kMaxNesting) +
                                   " levels (a tensor entry needs 3)");
      frames_.push_back({event == json::parse_event_t::object_start, {}, {}});
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      if (!frames_.empty()) frames_.pop_back();
      break;
    case json::parse_event_t::key:
      on_key(parsed.get_ref<const std::string&>());
      break;
    case json::parse_event_t::value:
      break;
    }
    return true;
  }

private:
  struct Frame {
    bool is_object;
    std::unordered_set<std::string> keys;
    std::string current_key;
  };

  void on_key(const std::string& key) {
    if (frames_.empty()) return;
    Frame& top = frames_.back();
    if (!top.keys.insert(key).second) {
      if (frames_.size() == 1) {
        if (key == "__metadata__")
          throw SafetensorsError(path_, "", "duplicate key '__metadata__'");
        throw SafetensorsError(path_, key, "the name appears twice in the header");
      }
      const std::string& owner = frames_.front().current_key;
      if (owner == "__metadata__")
        throw SafetensorsError(path_, "", "__metadata__: duplicate key '" + key + "'");
      throw SafetensorsError(path_, owner, "duplicate key '" + key + "'");
    }
    top.current_key = key;
  }

  const std::string& path_;
  std::vector<Frame> frames_;
};

// The validation of one header, with the file and the facts found so far as named state.
class HeaderParser {
public:
  HeaderParser(std::span<const std::byte> file, const std::string& path)
      : file_(file), path_(path) {}

  SafetensorsHeader parse() {
    read_length();
    json root = read_json();
    if (!root.is_object())
      throw error("", "the header is " + kind_of(root) + ", not a JSON object");
    for (auto& [key, value] : root.items()) {
      if (key == "__metadata__")
        read_metadata(value);
      else
        header_.tensors.push_back(read_entry(key, value));
    }
    check_layout();
    return std::move(header_);
  }

private:
  SafetensorsError error(const std::string& tensor, const std::string& why) const {
    return SafetensorsError(path_, tensor, why);
  }

  void read_length() {
    const uint64_t size = file_.size();
    if (size < 8)
      throw error("", "the file is " + std::to_string(size) +
                          " bytes, shorter than the 8-byte header length a safetensors file "
                          "starts with");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
      n = (n << 8) | std::to_integer<uint64_t>(file_[i]);
    if (n > kSafetensorsMaxHeaderSize)
      throw error("", "header length " + std::to_string(n) + " bytes exceeds the limit of " +
                          std::to_string(kSafetensorsMaxHeaderSize) +
                          " (a corrupt or lying length; the file is " + std::to_string(size) +
                          " bytes)");
    if (n > size - 8)
      throw error("", "header length " + std::to_string(n) +
                          " bytes runs past the end of the file (" + std::to_string(size) +
                          " bytes: at most " + std::to_string(size - 8) +
                          " after the 8-byte length); the file is truncated or not safetensors");
    header_.header_size = n;
    header_.data_size = size - 8 - n;
  }

  json read_json() {
    std::string_view text(reinterpret_cast<const char*>(file_.data()) + 8,
                          static_cast<size_t>(header_.header_size));
    if (text.empty()) throw error("", "the header is empty (length 0), not a JSON object");
    if (auto bad = first_invalid_utf8(text))
      throw error("", "the header is not valid UTF-8 (ill-formed byte 0x" + hex_byte(text[*bad]) +
                          " at offset " + std::to_string(*bad) + " of the header)");
    JsonShapeGuard guard(path_);
    try {
      return json::parse(text.begin(), text.end(), std::ref(guard));
    } catch (const json::exception& e) {
      throw error("", std::string("the header is not valid JSON: ") + e.what());
    }
  }

  static std::string hex_byte(char c) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    const auto b = static_cast<unsigned char>(c);
    return {kDigits[b >> 4], kDigits[b & 15]};
  }

  void read_metadata(const json& value) {
    if (value.is_null()) return; // the reference reads null as "no metadata"
    if (!value.is_object())
      throw error("", "__metadata__ is " + kind_of(value) + ", not an object of strings");
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string())
        throw error("", "__metadata__ '" + key + "' is " + kind_of(v) +
                            ", not a string (metadata maps strings to strings)");
      header_.metadata.emplace(key, v.get<std::string>());
    }
  }

  // A non-negative integer that fits `limit`, or an error naming `what`.
  uint64_t read_count(const std::string& tensor, const std::string& what, const json& v,
                      uint64_t limit) const {
    if (v.is_number_unsigned()) {
      const auto n = v.get<uint64_t>();
      if (n > limit)
        throw error(tensor, what + " is " + std::to_string(n) + ", above the largest supported (" +
                                std::to_string(limit) + ")");
      return n;
    }
    if (v.is_number_integer()) throw error(tensor, what + " is " + quote_value(v) + ", negative");
    throw error(tensor, what + " is " + kind_of(v) + ", not a non-negative integer");
  }

  const json& field(const std::string& tensor, const json& entry, const char* key) const {
    auto it = entry.find(key);
    if (it == entry.end())
      throw error(tensor, std::string("missing \"") + key +
                              "\" (an entry needs \"dtype\", \"shape\" and \"data_offsets\")");
    return *it;
  }

  SafetensorsTensorInfo read_entry(const std::string& name, const json& entry) const {
    if (!entry.is_object())
      throw error(name, "the entry is " + kind_of(entry) +
                            ", not an object with \"dtype\", \"shape\" and \"data_offsets\"");
    SafetensorsTensorInfo t;
    t.name = name;

    const json& dtype = field(name, entry, "dtype");
    if (!dtype.is_string()) throw error(name, "dtype is " + kind_of(dtype) + ", not a string");
    const auto& dtype_name = dtype.get_ref<const std::string&>();
    auto parsed = parse_safetensors_dtype(dtype_name);
    if (!parsed) {
      if (is_sub_byte_safetensors_dtype(dtype_name))
        throw error(name, "dtype '" + dtype_name +
                              "' (a sub-byte type) is not supported; supported: " +
                              safetensors_dtype_names());
      throw error(name, "unknown dtype " + quote_value(dtype) +
                            "; supported: " + safetensors_dtype_names());
    }
    t.dtype = *parsed;

    const json& shape = field(name, entry, "shape");
    if (!shape.is_array())
      throw error(name, "shape is " + kind_of(shape) + ", not an array of dimensions");
    // Counted in u64 like the reference; a product that overflows is refused even when a
    // later dimension is 0, since no writer produces such a shape.
    uint64_t count = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      const uint64_t dim = read_count(name, "shape[" + std::to_string(i) + "]", shape[i],
                                      std::numeric_limits<int64_t>::max());
      t.shape.push_back(static_cast<int64_t>(dim));
      if (__builtin_mul_overflow(count, dim, &count))
        throw error(name, "shape " + quote_value(shape) +
                              " has more elements than 2^64 (the product overflows)");
    }
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(item_size(t.dtype)), &nbytes))
      throw error(name, "shape " + quote_value(shape) + " of " + to_string(t.dtype) +
                            " needs more than 2^64 bytes (the size overflows)");

    const json& offsets = field(name, entry, "data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
      throw error(name, "data_offsets is " + quote_value(offsets) + ", not [begin, end]");
    t.begin = read_count(name, "data_offsets[0]", offsets[0], std::numeric_limits<uint64_t>::max());
    t.end = read_count(name, "data_offsets[1]", offsets[1], std::numeric_limits<uint64_t>::max());
    if (t.end < t.begin)
      throw error(name, "data_offsets " + format_range(t.begin, t.end) + " end before they begin");
    if (t.end - t.begin != nbytes)
      throw error(name, "data_offsets " + format_range(t.begin, t.end) + " hold " +
                            std::to_string(t.end - t.begin) + " bytes, but shape " +
                            format_shape(t.shape) + " of " + to_string(t.dtype) + " needs " +
                            std::to_string(nbytes) + " (" + std::to_string(count) + " x " +
                            std::to_string(item_size(t.dtype)) + ")");
    if (t.end > header_.data_size)
      throw error(name, "data_offsets " + format_range(t.begin, t.end) +
                            " run past the end of the data buffer (" +
                            std::to_string(header_.data_size) + " bytes: the file's " +
                            std::to_string(file_.size()) + " less the 8-byte length and the " +
                            std::to_string(header_.header_size) + "-byte header)");
    // Every count is now below the file size, so it fits int64 as the IR's extents do.
    t.num_elements = static_cast<int64_t>(count);
    return t;
  }

  // The ranges must tile the data buffer: each tensor begins where the previous one ends,
  // and the last ends at the end of the file.
  void check_layout() {
    auto& ts = header_.tensors;
    std::sort(ts.begin(), ts.end(),
              [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
                if (a.begin != b.begin) return a.begin < b.begin;
                if (a.end != b.end) return a.end < b.end;
                return a.name < b.name;
              });
    uint64_t covered = 0;
    const SafetensorsTensorInfo* previous = nullptr;
    for (const SafetensorsTensorInfo& t : ts) {
      if (t.begin < covered)
        throw error(t.name, "data_offsets " + format_range(t.begin, t.end) +
                                " overlap those of tensor '" + previous->name + "' " +
                                format_range(previous->begin, previous->end));
      if (t.begin > covered)
        throw error(t.name, "bytes [" + std::to_string(covered) + ", " + std::to_string(t.begin) +
                                ") of the data buffer before it (data_offsets " +
                                format_range(t.begin, t.end) + ") belong to no tensor" +
                                (previous ? " (after tensor '" + previous->name + "')" : "") +
                                "; the spec requires the tensors to cover the buffer");
      covered = t.end;
      previous = &t;
    }
    if (covered != header_.data_size)
      throw error("", "the data buffer is " + std::to_string(header_.data_size) +
                          " bytes, but the tensors cover only " + std::to_string(covered) +
                          (previous ? " (the last, '" + previous->name + "', ends there)" : "") +
                          ": " + std::to_string(header_.data_size - covered) +
                          " bytes at the end belong to no tensor");
  }

  std::span<const std::byte> file_;
  const std::string& path_;
  SafetensorsHeader header_;
};

} // namespace

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           const std::string& path) {
  return HeaderParser(file, path).parse();
}

} // namespace mt
