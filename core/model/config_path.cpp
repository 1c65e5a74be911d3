// Parsing and spelling config field paths (see config_path.h).
#include "core/model/config_path.h"

#include <limits>

#include "core/model/config_error.h"
#include "core/model/config_schema.h"

namespace mt {

std::vector<ConfigPathStep> parse_config_path(std::string_view path) {
  auto fail = [&](const std::string& why) -> void {
    throw ConfigError("config path '" + std::string(path) + "': " + why);
  };
  if (path.empty()) fail("empty path");
  std::vector<ConfigPathStep> steps;
  size_t pos = 0;
  while (true) {
    size_t end = path.find_first_of(".[", pos);
    ConfigPathStep step;
    step.field =
        std::string(path.substr(pos, end == std::string_view::npos ? path.npos : end - pos));
    if (!is_config_identifier(step.field))
      fail(step.field.empty() ? "empty field name" : "'" + step.field + "' is not a field name");
    pos = end;
    if (pos != std::string_view::npos && path[pos] == '[') {
      size_t close = path.find(']', pos);
      if (close == std::string_view::npos || close == pos + 1) fail("malformed index");
      size_t index = 0;
      for (size_t i = pos + 1; i < close; ++i) {
        char c = path[i];
        if (c < '0' || c > '9') fail("malformed index");
        if (index > (std::numeric_limits<size_t>::max() - 9) / 10) fail("index too large");
        index = index * 10 + static_cast<size_t>(c - '0');
      }
      step.index = index;
      pos = close + 1;
      if (pos < path.size() && path[pos] != '.') fail("expected '.' after ']'");
      if (pos == path.size()) pos = std::string_view::npos;
    }
    steps.push_back(std::move(step));
    if (pos == std::string_view::npos) break;
    ++pos; // past '.'
    if (pos == path.size()) fail("ends with '.'");
  }
  return steps;
}

std::string join_config_path(const std::string& parent, const std::string& field) {
  return parent.empty() ? field : parent + "." + field;
}

std::string index_config_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

} // namespace mt
