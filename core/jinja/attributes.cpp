// Attribute, item and slice lookup, and the Python methods templates call on strings and dicts
// (see builtins.h). Strings are UTF-8; indexes and slices count code points, as Python does.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "core/jinja/builtins.h"
#include "core/jinja/utf8.h"

namespace mt::jinja {

namespace {

// Python's str.isspace() of one code point.
bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

const std::string& string_arg(const Value* v, const char* what) {
  if (!v || !v->is_string())
    throw std::invalid_argument(std::string(what) + " must be str, not " +
                                (v ? v->type_name() : "nothing"));
  return v->as_string();
}

// Python's str.split(sep=None, maxsplit=-1).
List split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (!sep || sep->is_none()) { // runs of whitespace, none empty
    size_t i = 0;
    while (i < s.size()) {
      size_t n;
      while (i < s.size() && is_python_space(decode_utf8_at(s, i, &n)))
        i += n;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        // the rest, with its trailing whitespace stripped
        out.emplace_back(strip(s.substr(i), nullptr, false, true));
        return out;
      }
      size_t j = i;
      while (j < s.size() && !is_python_space(decode_utf8_at(s, j, &n)))
        j += n;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string& d = string_arg(sep, "separator");
  if (d.empty()) throw std::invalid_argument("empty separator");
  size_t start = 0;
  for (;;) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
    const size_t at = s.find(d, start);
    if (at == std::string::npos) break;
    out.emplace_back(s.substr(start, at - start));
    start = at + d.size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::string ascii_map(std::string s, int (*f)(int)) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x80)
      c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return s;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    const std::string& t = string_arg(&a, prefix ? "startswith's argument" : "endswith's argument");
    return t.size() <= s.size() && (prefix ? s.compare(0, t.size(), t) == 0
                                           : s.compare(s.size() - t.size(), t.size(), t) == 0);
  };
  if (affix.is_list()) {
    for (const Value& a : affix.as_list())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

int64_t int_arg(const Value* v, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool())
    throw std::invalid_argument(std::string("an int is required, not ") + v->type_name());
  return v->is_bool() ? v->as_bool() : v->as_int();
}

// The bound method `name` of a str, or an undefined value.
Value string_method(const std::string& s, const std::string& name) {
  auto bind = [](auto f) { return Value(Function(std::move(f))); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool l = name != "rstrip", r = name != "lstrip";
    return bind([s, l, r](const Args& a) { return Value(strip(s, a.get("chars", 0), l, r)); });
  }
  if (name == "split")
    return bind([s](const Args& a) {
      return Value(split(s, a.get("sep", 0), int_arg(a.get("maxsplit", 1), -1)));
    });
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return bind([s, prefix](const Args& a) {
      const Value* x = a.get("prefix", 0);
      if (!x) throw std::invalid_argument("startswith/endswith take one argument");
      return Value(affix_match(s, *x, prefix));
    });
  }
  if (name == "upper") return bind([s](const Args&) { return Value(ascii_map(s, ::toupper)); });
  if (name == "lower") return bind([s](const Args&) { return Value(ascii_map(s, ::tolower)); });
  if (name == "capitalize")
    return bind([s](const Args&) {
      std::string t = ascii_map(s, ::tolower);
      if (!t.empty() && static_cast<unsigned char>(t[0]) < 0x80)
        t[0] = static_cast<char>(::toupper(t[0]));
      return Value(t);
    });
  if (name == "title")
    return bind([s](const Args&) {
      std::string t = s;
      bool prev_cased = false;
      for (char& c : t) {
        const auto u = static_cast<unsigned char>(c);
        const bool alpha = u < 0x80 && std::isalpha(u);
        if (alpha) c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
        prev_cased = alpha;
      }
      return Value(t);
    });
  if (name == "replace")
    return bind([s](const Args& a) {
      const std::string& from = string_arg(a.get("old", 0), "replace's old");
      const std::string& to = string_arg(a.get("new", 1), "replace's new");
      int64_t count = int_arg(a.get("count", 2), -1);
      std::string out;
      if (from.empty()) { // Python inserts `to` between characters
        const auto chars = utf8_code_points(s);
        for (size_t i = 0; i <= chars.size(); ++i) {
          if (count < 0 || static_cast<int64_t>(i) < count) out += to;
          if (i < chars.size()) out += chars[i];
        }
        return Value(out);
      }
      size_t start = 0;
      for (size_t at; count != 0 && (at = s.find(from, start)) != std::string::npos; --count) {
        out += s.substr(start, at - start) + to;
        start = at + from.size();
      }
      return Value(out + s.substr(start));
    });
  if (name == "swapcase")
    return bind([s](const Args&) {
      std::string t = s;
      for (char& c : t) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80) c = static_cast<char>(std::isupper(u) ? std::tolower(u) : std::toupper(u));
      }
      return Value(t);
    });
  if (name == "zfill" || name == "ljust" || name == "rjust" || name == "center")
    return bind([s, name](const Args& a) {
      const int64_t width = int_arg(a.get("width", 0), 0);
      const Value* fill = a.get("fillchar", 1);
      const std::string f = name == "zfill" ? "0"
                            : fill          ? string_arg(fill, "the fill character")
                                            : " ";
      const auto n = utf8_length(s);
      if (width <= n) return Value(s);
      const auto pad = static_cast<size_t>(width - n);
      auto repeat = [&f](size_t k) {
        std::string r;
        for (size_t i = 0; i < k; ++i)
          r += f;
        return r;
      };
      if (name == "ljust") return Value(s + repeat(pad));
      if (name == "rjust") return Value(repeat(pad) + s);
      if (name == "center") {
        const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
        return Value(repeat(left) + s + repeat(pad - left));
      }
      const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
      return Value(sign ? s.substr(0, 1) + repeat(pad) + s.substr(1) : repeat(pad) + s);
    });
  if (name == "partition" || name == "rpartition")
    return bind([s, name](const Args& a) {
      const std::string& sep = string_arg(a.get("sep", 0), "the separator");
      if (sep.empty()) throw std::invalid_argument("empty separator");
      const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
      if (at == std::string::npos)
        return name == "partition" ? Value::tuple(List{Value(s), Value(""), Value("")})
                                   : Value::tuple(List{Value(""), Value(""), Value(s)});
      return Value::tuple(
          List{Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))});
    });
  if (name == "index")
    return bind([s](const Args& a) {
      const std::string& sub = string_arg(a.get("sub", 0), "the substring");
      const size_t at = s.find(sub);
      if (at == std::string::npos) throw std::invalid_argument("substring not found");
      return Value(utf8_length(s.substr(0, at)));
    });
  if (name == "find" || name == "count")
    return bind([s, name](const Args& a) {
      const std::string& sub = string_arg(a.get("sub", 0), "the substring");
      if (name == "find") {
        const size_t at = s.find(sub);
        return Value(at == std::string::npos ? int64_t{-1} : utf8_length(s.substr(0, at)));
      }
      if (sub.empty()) return Value(utf8_length(s) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size()))
        ++n;
      return Value(n);
    });
  if (name == "join")
    return bind([s](const Args& a) {
      const Value* items = a.get("iterable", 0);
      if (!items) throw std::invalid_argument("join takes one argument");
      std::string out;
      bool first = true;
      for (const Value& v : items->items()) {
        if (!v.is_string())
          throw std::invalid_argument(std::string("sequence item: expected str instance, ") +
                                      v.type_name() + " found");
        out += (first ? "" : s) + v.as_string();
        first = false;
      }
      return Value(out);
    });
  if (name == "splitlines")
    return bind([s](const Args&) {
      List out;
      size_t start = 0;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == '\n' || s[i] == '\r') {
          out.emplace_back(s.substr(start, i - start));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          start = i + 1;
        }
      if (start < s.size()) out.emplace_back(s.substr(start));
      return Value(out);
    });
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isupper" ||
      name == "islower")
    return bind([s, name](const Args&) {
      if (s.empty()) return Value(false);
      bool cased = false;
      for (const std::string& ch : utf8_code_points(s)) {
        size_t n;
        const uint32_t cp = decode_utf8_at(ch, 0, &n);
        const bool ascii = cp < 0x80;
        if (name == "isspace"   ? !is_python_space(cp)
            : name == "isdigit" ? !(ascii && std::isdigit(static_cast<int>(cp)))
            : name == "isalpha" ? !(ascii && std::isalpha(static_cast<int>(cp)))
            : name == "isupper" ? (ascii && std::islower(static_cast<int>(cp)))
                                : (ascii && std::isupper(static_cast<int>(cp))))
          return Value(false);
        cased = cased || (ascii && std::isalpha(static_cast<int>(cp)));
      }
      return Value(name == "isupper" || name == "islower" ? cased : true);
    });
  return Value::undefined(name);
}

Value dict_method(const Value& d, const std::string& name) {
  auto bind = [](auto f) { return Value(Function(std::move(f))); };
  if (name == "items")
    return bind([d](const Args&) {
      List out;
      for (const auto& [k, v] : d.as_dict())
        out.push_back(Value::tuple(List{k, v}));
      return Value(out);
    });
  if (name == "keys") return bind([d](const Args&) { return Value(d.items()); });
  if (name == "values")
    return bind([d](const Args&) {
      List out;
      for (const auto& kv : d.as_dict())
        out.push_back(kv.second);
      return Value(out);
    });
  if (name == "get")
    return bind([d](const Args& a) {
      const Value* key = a.get("key", 0);
      if (!key) throw std::invalid_argument("get expected at least 1 argument, got 0");
      if (const Value* v = d.find(*key)) return *v;
      const Value* fallback = a.get("default", 1);
      return fallback ? *fallback : Value(None{});
    });
  if (name == "update" || name == "pop" || name == "setdefault" || name == "clear" ||
      name == "popitem")
    return bind([name](const Args&) -> Value {
      throw std::invalid_argument("dict." + name +
                                  " is not allowed: a template does not modify its "
                                  "inputs (use namespace() or set)");
    });
  return Value::undefined(name);
}

// A Python index into a sequence of `size` items: negative counts from the end; npos outside.
size_t index_of(const Value& key, size_t size) {
  int64_t i = key.is_bool() ? key.as_bool() : key.as_int();
  if (i < 0) i += static_cast<int64_t>(size);
  return i < 0 || i >= static_cast<int64_t>(size) ? static_cast<size_t>(-1)
                                                  : static_cast<size_t>(i);
}

} // namespace

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<std::string> set;
  const bool whitespace = !chars || chars->is_none();
  if (!whitespace) set = utf8_code_points(string_arg(chars, "strip's argument"));
  auto strippable = [&](const std::string& cp) {
    if (whitespace) {
      size_t n;
      return is_python_space(decode_utf8_at(cp, 0, &n));
    }
    return std::find(set.begin(), set.end(), cp) != set.end();
  };
  const auto cps = utf8_code_points(s);
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b]))
      ++b;
  if (right)
    while (e > b && strippable(cps[e - 1]))
      --e;
  std::string out;
  for (size_t i = b; i < e; ++i)
    out += cps[i];
  return out;
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(obj.as_string(), name);
  if (obj.is_dict()) {
    Value m = dict_method(obj, name);
    if (!m.is_undefined()) return m;
  }
  if (const Value* v = obj.find(Value(name))) return *v;
  if (obj.is_list() && (name == "count" || name == "index")) {
    const List items = obj.as_list();
    return Value(Function([items, name](const Args& a) {
      const Value* x = a.get("value", 0);
      if (!x) throw std::invalid_argument("list." + name + " takes one argument");
      int64_t n = 0;
      for (size_t i = 0; i < items.size(); ++i)
        if (items[i] == *x) {
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++n;
        }
      if (name == "index") throw std::invalid_argument(x->repr() + " is not in list");
      return Value(n);
    }));
  }
  if (obj.is_list() && (name == "append" || name == "extend" || name == "pop" || name == "insert" ||
                        name == "remove" || name == "sort" || name == "reverse" || name == "clear"))
    return Value(Function([name](const Args&) -> Value {
      throw std::invalid_argument("list." + name +
                                  " is not allowed: a template does not modify its "
                                  "inputs (build a new list with +)");
    }));
  return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_list() && (key.is_int() || key.is_bool())) {
    const size_t i = index_of(key, obj.as_list().size());
    return i == static_cast<size_t>(-1) ? Value::undefined("item") : obj.as_list()[i];
  }
  if (obj.is_string() && (key.is_int() || key.is_bool())) {
    const auto cps = utf8_code_points(obj.as_string());
    const size_t i = index_of(key, cps.size());
    return i == static_cast<size_t>(-1) ? Value::undefined("item") : Value(cps[i]);
  }
  if (const Value* v = obj.find(key)) return *v;
  if (key.is_string()) return get_attribute(obj, key.as_string());
  return Value::undefined(key.str());
}

Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  const bool is_string = obj.is_string();
  if (!is_string && !obj.is_list())
    throw std::invalid_argument(std::string("'") + obj.type_name() +
                                "' object is not subscriptable");
  const List items = obj.items();
  const auto n = static_cast<int64_t>(items.size());
  const int64_t st = int_arg(step, 1);
  if (st == 0) throw std::invalid_argument("slice step cannot be zero");
  // Python's slice.indices().
  auto bound = [&](const Value* v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = int_arg(v, 0);
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = bound(start, st > 0 ? 0 : n - 1), e = bound(stop, st > 0 ? n : -1);
  List out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st)
    out.push_back(items[static_cast<size_t>(i)]);
  if (!is_string) return out;
  std::string s;
  for (const Value& c : out)
    s += c.as_string();
  return s;
}

Dict global_functions() {
  Dict g;
  g.emplace_back("range", Value(Function([](const Args& a) {
                   std::vector<int64_t> p;
                   for (const Value& v : a.positional)
                     p.push_back(int_arg(&v, 0));
                   if (p.empty() || p.size() > 3)
                     throw std::invalid_argument("range expected 1 to 3 arguments");
                   const int64_t b = p.size() == 1 ? 0 : p[0], e = p.size() == 1 ? p[0] : p[1],
                                 s = p.size() == 3 ? p[2] : 1;
                   if (s == 0) throw std::invalid_argument("range() arg 3 must not be zero");
                   List out;
                   for (int64_t i = b; s > 0 ? i < e : i > e; i += s) {
                     if (out.size() >= 100000) throw std::invalid_argument("range too big");
                     out.emplace_back(i);
                   }
                   return Value(out);
                 })));
  // namespace(d, k=v) and dict(d, k=v): a dict's items, then the keyword arguments.
  auto items_of = [](const Args& a) {
    Dict d;
    for (const Value& v : a.positional)
      if (v.is_dict())
        for (const auto& kv : v.as_dict())
          d.push_back(kv);
    for (const auto& [k, v] : a.keyword)
      d.emplace_back(k, v);
    return d;
  };
  g.emplace_back("namespace", Value(Function([items_of](const Args& a) {
                   return Value::namespace_of(items_of(a));
                 })));
  g.emplace_back("dict", Value(Function([items_of](const Args& a) { return Value(items_of(a)); })));
  return g;
}

} // namespace mt::jinja
