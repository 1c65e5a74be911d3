// Python's json.dumps of template values (see json_dump.h).
#include "core/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "core/jinja/utf8.h"

namespace mt::jinja {

namespace {

// A JSON string: the escapes json.dumps writes (\" \\ \n \r \t \b \f, \u00XX below 0x20); with
// ensure_ascii, everything beyond ASCII as \uXXXX (surrogate pairs above the BMP).
std::string quote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    switch (c) {
    case '"':
      out += "\\\"";
      continue;
    case '\\':
      out += "\\\\";
      continue;
    case '\n':
      out += "\\n";
      continue;
    case '\r':
      out += "\\r";
      continue;
    case '\t':
      out += "\\t";
      continue;
    case '\b':
      out += "\\b";
      continue;
    case '\f':
      out += "\\f";
      continue;
    default:
      break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      size_t n;
      uint32_t cp = decode_utf8_at(s, i, &n);
      i += n - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                      0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// json.dumps's state: the options and the nesting depth for indentation.
class Dumper {
public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.has_item_separator ? o.item_separator : (o.has_indent ? "," : ", ");
    if (o.has_indent)
      unit_ = !o.indent_text.empty() ? o.indent_text
                                     : std::string(static_cast<size_t>(std::max(0, o.indent)), ' ');
  }

  void dump(const Value& v, int depth, std::string& out) const {
    if (depth > 512) throw std::invalid_argument("a value nested too deeply for JSON");
    if (v.is_none())
      out += "null";
    else if (v.is_bool())
      out += v.as_bool() ? "true" : "false";
    else if (v.is_int())
      out += std::to_string(v.as_int());
    else if (v.is_float())
      out += number(v.as_float());
    else if (v.is_string())
      out += quote(v.as_string(), o_.ensure_ascii);
    else if (v.is_list())
      sequence(v.as_list(), depth, out);
    else if (v.is_dict())
      object(v.as_dict(), depth, out);
    else if (v.is_namespace())
      object(v.as_namespace().attributes, depth, out);
    else
      throw std::invalid_argument(std::string("Object of type ") + v.type_name() +
                                  " is not JSON serializable");
  }

private:
  static std::string number(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return float_repr(d);
  }
  void newline(int depth, std::string& out) const {
    if (!o_.has_indent) return;
    out += "\n";
    for (int i = 0; i < depth; ++i)
      out += unit_;
  }
  void sequence(const List& l, int depth, std::string& out) const {
    if (l.empty()) {
      out += "[]";
      return;
    }
    out += "[";
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += item_sep_;
      newline(depth + 1, out);
      dump(l[i], depth + 1, out);
    }
    newline(depth, out);
    out += "]";
  }
  // A key as json.dumps converts it: strings as they are, numbers, bools and None written out.
  static std::string key_text(const Value& k) {
    if (k.is_string()) return k.as_string();
    if (k.is_bool()) return k.as_bool() ? "true" : "false";
    if (k.is_none()) return "null";
    if (k.is_int()) return std::to_string(k.as_int());
    if (k.is_float()) return number(k.as_float());
    throw std::invalid_argument(std::string("keys must be str, int, float, bool or None, not ") +
                                k.type_name());
  }
  void object(const Dict& d, int depth, std::string& out) const {
    if (d.empty()) {
      out += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> items;
    for (const auto& [k, v] : d)
      items.emplace_back(key_text(k), &v);
    if (o_.sort_keys)
      std::stable_sort(items.begin(), items.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    out += "{";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep_;
      newline(depth + 1, out);
      out += quote(items[i].first, o_.ensure_ascii) + o_.key_separator;
      dump(*items[i].second, depth + 1, out);
    }
    newline(depth, out);
    out += "}";
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, unit_;
};

} // namespace

std::string json_dump(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(v, 0, out);
  return out;
}

} // namespace mt::jinja
