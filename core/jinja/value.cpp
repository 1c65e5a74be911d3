// Python's semantics of the template values (see value.h).
#include "core/jinja/value.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/jinja/utf8.h"

namespace mt::jinja {

const Value* Args::get(std::string_view name, size_t index) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  if (index < positional.size()) return &positional[index];
  return nullptr;
}

double Value::number() const {
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  if (is_int()) return static_cast<double>(as_int());
  return as_float();
}

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_float() != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !as_list().empty();
  if (is_dict()) return !as_dict().empty();
  return true;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, then Python's layout: positional for exponents in
  // [-4, 16), else d.ddde+XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  int exp = std::stoi(s.substr(e + 1));
  std::string mant = s.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
            digits.substr(static_cast<size_t>(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += ebuf;
  }
  return neg ? "-" + out : out;
}

namespace {

// Python's repr of a str: single quotes unless the text has one and no double quote.
std::string string_repr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == q)
      out += std::string("\\") + static_cast<char>(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else
      out += static_cast<char>(c);
  }
  out += q;
  return out;
}

// An int or a bool as the integer it is in Python.
int64_t integer_of(const Value& v) {
  return v.is_bool() ? int64_t{v.as_bool()} : v.as_int();
}

} // namespace

std::string Value::str() const {
  if (is_undefined()) return "";
  if (is_string()) return as_string();
  return repr();
}

std::string Value::repr() const {
  return repr_at(0);
}

std::string Value::repr_at(int depth) const {
  // Values a template builds can nest as deep as its loops go ({% set ns.x = [ns.x] %}):
  // bounded, so that printing one is an error, not a stack overflow.
  if (depth > 512) throw std::invalid_argument("a value nested too deeply to print");
  if (is_undefined()) return "Undefined";
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return float_repr(as_float());
  if (is_string()) return string_repr(as_string());
  if (is_list()) {
    std::string out = tuple_ ? "(" : "[";
    for (size_t i = 0; i < as_list().size(); ++i)
      out += (i ? ", " : "") + as_list()[i].repr_at(depth + 1);
    if (tuple_ && as_list().size() == 1) out += ",";
    return out + (tuple_ ? ")" : "]");
  }
  if (is_dict()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : as_dict()) {
      out += (first ? "" : ", ") + k.repr_at(depth + 1) + ": " + v.repr_at(depth + 1);
      first = false;
    }
    return out + "}";
  }
  if (is_namespace())
    return "<Namespace " + Value(as_namespace().attributes).repr_at(depth + 1) + ">";
  return "<function>";
}

const char* Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return tuple_ ? "tuple" : "list";
  if (is_dict()) return "dict";
  if (is_namespace()) return "Namespace";
  return "function";
}

const Value* Value::find(const Value& key) const {
  if (is_dict()) {
    for (const auto& [k, v] : as_dict())
      if (k == key) return &v;
  } else if (is_namespace()) {
    for (const auto& [k, v] : as_namespace().attributes)
      if (k == key) return &v;
  }
  return nullptr;
}

List Value::items() const {
  if (is_undefined()) return {};
  if (is_list()) return as_list();
  if (is_dict()) {
    List keys;
    for (const auto& kv : as_dict())
      keys.push_back(kv.first);
    return keys;
  }
  if (is_string()) {
    List chars;
    for (std::string& c : utf8_code_points(as_string()))
      chars.emplace_back(std::move(c));
    return chars;
  }
  throw std::invalid_argument(std::string("'") + type_name() + "' object is not iterable");
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      return integer_of(a) == integer_of(b);
    }
    return a.number() == b.number();
  }
  if (a.v_.index() != b.v_.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) return a.tuple_ == b.tuple_ && a.as_list() == b.as_list();
  if (a.is_dict()) {
    if (a.as_dict().size() != b.as_dict().size()) return false;
    for (const auto& [k, v] : a.as_dict()) {
      const Value* w = b.find(k);
      if (!w || !(*w == v)) return false;
    }
    return true;
  }
  if (a.is_callable()) return &a.as_callable() == &b.as_callable(); // the same object
  return &a.as_namespace() == &b.as_namespace();
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return integer_of(a) < integer_of(b);
    return a.number() < b.number();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_than(x[i], y[i])) return true;
      if (less_than(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw std::invalid_argument(std::string("'<' not supported between instances of '") +
                              a.type_name() + "' and '" + b.type_name() + "'");
}

} // namespace mt::jinja
