// Jinja's filters as Hugging Face renders chat templates with them (see builtins.h): the
// built-in ones, with `tojson` being Python's json.dumps (transformers' replacement).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include "core/jinja/builtins.h"
#include "core/jinja/json_dump.h"
#include "core/jinja/utf8.h"

namespace mt::jinja {

namespace {

using FilterFn = std::function<Value(const Value&, const Args&)>;

int64_t length(const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_string()) return utf8_length(v.as_string());
  if (v.is_list()) return static_cast<int64_t>(v.as_list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().size());
  throw std::invalid_argument(std::string("object of type '") + v.type_name() + "' has no len()");
}

bool flag(const Value* v, bool fallback) {
  return v ? v->truthy() : fallback;
}

// Jinja's attribute argument: "a.b.0" looks up a, then b, then item 0.
Value by_path(const Value& v, const Value& path) {
  if (!path.is_string()) return get_item(v, path);
  Value cur = v;
  const std::string& p = path.as_string();
  size_t start = 0;
  for (;;) {
    const size_t dot = p.find('.', start);
    const std::string part =
        p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part))))
                 : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// The key a case-insensitive comparison uses: ASCII letters lowered in strings.
Value folded(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  std::string s = v.as_string();
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(std::tolower(c));
  return s;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&#34;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// select/reject and selectattr/rejectattr: the items whose (attribute's) test passes, or fails.
Value select(const Value& seq, const Args& a, bool by_attribute, bool keep) {
  size_t i = 0;
  Value attribute;
  if (by_attribute) {
    if (a.positional.empty())
      throw std::invalid_argument("selectattr/rejectattr need an attribute");
    attribute = a.positional[i++];
  }
  std::string test;
  if (i < a.positional.size()) {
    if (!a.positional[i].is_string())
      throw std::invalid_argument("the test's name must be a string");
    test = a.positional[i++].as_string();
  }
  Args rest;
  rest.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(i), a.positional.end());
  List out;
  for (const Value& item : seq.items()) {
    const Value x = by_attribute ? by_path(item, attribute) : item;
    const bool pass = test.empty() ? x.truthy() : apply_test(test, x, rest);
    if (pass == keep) out.push_back(item);
  }
  return out;
}

Value number_filter(const Value& v, const Args& a, bool integer) {
  const Value* fallback = a.get("default", 0);
  const Value dflt = fallback ? *fallback : integer ? Value(int64_t{0}) : Value(0.0);
  if (v.is_bool() || v.is_int())
    return integer ? Value(v.is_bool() ? int64_t{v.as_bool()} : v.as_int()) : Value(v.number());
  if (v.is_float()) return integer ? Value(static_cast<int64_t>(std::trunc(v.as_float()))) : v;
  if (!v.is_string()) return dflt;
  const std::string s = strip(v.as_string(), nullptr, true, true);
  try {
    size_t used = 0;
    if (integer) {
      const int base = static_cast<int>(a.get("base", 1) ? a.get("base", 1)->as_int() : 10);
      std::string digits;
      for (char c : s)
        if (c != '_') digits += c;
      const long long i = std::stoll(digits, &used, base);
      if (used == digits.size() && !digits.empty()) return Value(static_cast<int64_t>(i));
    }
    const double d = std::stod(s, &used);
    if (used != s.size()) return dflt;
    return integer ? Value(static_cast<int64_t>(std::trunc(d))) : Value(d);
  } catch (const std::exception&) {
    return dflt;
  }
}

// Python's round(x, n): halves to even at the decimal the float is closest to.
double python_round(double x, int64_t digits) {
  const double scale = std::pow(10.0, static_cast<double>(digits));
  const double y = x * scale;
  double r = std::nearbyint(y);
  return r / scale;
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> f = [] {
    std::map<std::string, FilterFn, std::less<>> m;
    m["abs"] = [](const Value& v, const Args&) {
      if (v.is_float()) return Value(std::fabs(v.as_float()));
      if (v.is_int() || v.is_bool())
        return Value(static_cast<int64_t>(std::llabs(v.is_bool() ? v.as_bool() : v.as_int())));
      throw std::invalid_argument(std::string("bad operand type for abs(): '") + v.type_name() +
                                  "'");
    };
    m["attr"] = [](const Value& v, const Args& a) {
      const Value* name = a.get("name", 0);
      if (!name || !name->is_string()) throw std::invalid_argument("attr needs a name");
      return get_attribute(v, name->as_string());
    };
    m["batch"] = [](const Value& v, const Args& a) {
      const Value* n = a.get("linecount", 0);
      if (!n || !n->is_int() || n->as_int() <= 0)
        throw std::invalid_argument("batch needs a positive count");
      const Value* fill = a.get("fill_with", 1);
      List out, cur;
      for (const Value& x : v.items()) {
        cur.push_back(x);
        if (static_cast<int64_t>(cur.size()) == n->as_int())
          out.emplace_back(std::move(cur)), cur.clear();
      }
      if (!cur.empty()) {
        if (fill && !fill->is_none())
          while (static_cast<int64_t>(cur.size()) < n->as_int())
            cur.push_back(*fill);
        out.emplace_back(std::move(cur));
      }
      return Value(out);
    };
    m["capitalize"] = [](const Value& v, const Args&) {
      return get_attribute(Value(v.str()), "capitalize").as_callable()(Args{});
    };
    m["center"] = [](const Value& v, const Args& a) {
      const std::string s = v.str();
      const int64_t width = a.get("width", 0) ? a.get("width", 0)->as_int() : 80;
      const int64_t n = utf8_length(s);
      if (width <= n) return Value(s);
      const int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
      return Value(std::string(static_cast<size_t>(left), ' ') + s +
                   std::string(static_cast<size_t>(pad - left), ' '));
    };
    m["length"] = m["count"] = [](const Value& v, const Args&) { return Value(length(v)); };
    m["default"] = m["d"] = [](const Value& v, const Args& a) {
      const Value* fallback = a.get("default_value", 0);
      const bool boolean = flag(a.get("boolean", 1), false);
      if (v.is_undefined() || (boolean && !v.truthy())) return fallback ? *fallback : Value("");
      return v;
    };
    m["dictsort"] = [](const Value& v, const Args& a) {
      if (!v.is_dict()) throw std::invalid_argument("dictsort needs a dict");
      const bool cs = flag(a.get("case_sensitive", 0), false);
      const Value* by = a.get("by", 1);
      const bool by_value = by && by->is_string() && by->as_string() == "value";
      const bool reverse = flag(a.get("reverse", 2), false);
      List items;
      for (const auto& [k, x] : v.as_dict())
        items.push_back(Value::tuple(List{k, x}));
      std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
        const size_t i = by_value ? 1 : 0;
        return less_than(folded(p.as_list()[i], cs), folded(q.as_list()[i], cs));
      });
      if (reverse) std::reverse(items.begin(), items.end());
      return Value(items);
    };
    m["escape"] = m["e"] = [](const Value& v, const Args&) { return Value(html_escape(v.str())); };
    m["first"] = [](const Value& v, const Args&) {
      List items = v.items();
      return items.empty() ? Value::undefined("first") : items.front();
    };
    m["last"] = [](const Value& v, const Args&) {
      List items = v.items();
      return items.empty() ? Value::undefined("last") : items.back();
    };
    m["float"] = [](const Value& v, const Args& a) { return number_filter(v, a, false); };
    m["int"] = [](const Value& v, const Args& a) { return number_filter(v, a, true); };
    m["indent"] = [](const Value& v, const Args& a) {
      const Value* w = a.get("width", 0);
      const std::string unit =
          !w ? std::string(4, ' ')
          : w->is_string()
              ? w->as_string()
              : std::string(static_cast<size_t>(std::max<int64_t>(0, w->as_int())), ' ');
      const bool first = flag(a.get("first", 1), false), blank = flag(a.get("blank", 2), false);
      std::string s = v.str(), out;
      size_t start = 0;
      bool line0 = true;
      for (;;) {
        const size_t nl = s.find('\n', start);
        const std::string line =
            s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        const bool indent = line0 ? first : (blank || !strip(line, nullptr, true, true).empty());
        out += (indent && !(line0 && line.empty() && !first) ? unit : "") + line;
        if (nl == std::string::npos) break;
        out += "\n";
        start = nl + 1;
        line0 = false;
      }
      return Value(out);
    };
    m["items"] = [](const Value& v, const Args&) {
      if (v.is_undefined()) return Value(List{});
      if (!v.is_dict())
        throw std::invalid_argument(std::string("items needs a dict, not ") + v.type_name());
      return get_attribute(v, "items").as_callable()(Args{});
    };
    m["join"] = [](const Value& v, const Args& a) {
      const Value* sep = a.get("d", 0);
      const Value* attribute = a.get("attribute", 1);
      std::string out;
      bool firstItem = true;
      for (const Value& x : v.items()) {
        out += (firstItem ? ""
                : sep     ? sep->str()
                          : "") +
               (attribute ? by_path(x, *attribute) : x).str();
        firstItem = false;
      }
      return Value(out);
    };
    m["list"] = [](const Value& v, const Args&) { return Value(v.items()); };
    m["lower"] = [](const Value& v, const Args&) {
      return get_attribute(Value(v.str()), "lower").as_callable()(Args{});
    };
    m["upper"] = [](const Value& v, const Args&) {
      return get_attribute(Value(v.str()), "upper").as_callable()(Args{});
    };
    m["map"] = [](const Value& v, const Args& a) {
      List out;
      if (const Value* attribute = a.get("attribute")) {
        const Value* dflt = a.get("default");
        for (const Value& x : v.items()) {
          Value y = by_path(x, *attribute);
          out.push_back(y.is_undefined() && dflt ? *dflt : y);
        }
        return Value(out);
      }
      if (a.positional.empty() || !a.positional[0].is_string())
        throw std::invalid_argument("map needs a filter name or attribute=");
      Args rest;
      rest.positional.assign(a.positional.begin() + 1, a.positional.end());
      rest.keyword = a.keyword;
      for (const Value& x : v.items())
        out.push_back(apply_filter(a.positional[0].as_string(), x, rest));
      return Value(out);
    };
    auto extreme = [](bool want_max) {
      return [want_max](const Value& v, const Args& a) {
        const bool cs = flag(a.get("case_sensitive", 0), false);
        const Value* attribute = a.get("attribute", 1);
        List items = v.items();
        if (items.empty()) return Value::undefined(want_max ? "max" : "min");
        const Value* best = &items[0];
        for (const Value& x : items) {
          const Value kx = folded(attribute ? by_path(x, *attribute) : x, cs);
          const Value kb = folded(attribute ? by_path(*best, *attribute) : *best, cs);
          if (want_max ? less_than(kb, kx) : less_than(kx, kb)) best = &x;
        }
        return *best;
      };
    };
    m["max"] = extreme(true);
    m["min"] = extreme(false);
    m["select"] = [](const Value& v, const Args& a) { return select(v, a, false, true); };
    m["reject"] = [](const Value& v, const Args& a) { return select(v, a, false, false); };
    m["selectattr"] = [](const Value& v, const Args& a) { return select(v, a, true, true); };
    m["rejectattr"] = [](const Value& v, const Args& a) { return select(v, a, true, false); };
    m["replace"] = [](const Value& v, const Args& a) {
      Args r;
      r.positional.push_back(a.get("old", 0) ? *a.get("old", 0) : Value());
      r.positional.push_back(a.get("new", 1) ? *a.get("new", 1) : Value());
      if (const Value* c = a.get("count", 2)) r.positional.push_back(*c);
      return get_attribute(Value(v.str()), "replace").as_callable()(r);
    };
    m["reverse"] = [](const Value& v, const Args&) {
      List items = v.items();
      std::reverse(items.begin(), items.end());
      if (!v.is_string()) return Value(items);
      std::string s;
      for (const Value& c : items)
        s += c.as_string();
      return Value(s);
    };
    m["round"] = [](const Value& v, const Args& a) {
      if (!v.is_number())
        throw std::invalid_argument(std::string("round needs a number, not ") + v.type_name());
      const int64_t precision = a.get("precision", 0) ? a.get("precision", 0)->as_int() : 0;
      const Value* method = a.get("method", 1);
      const std::string how = method && method->is_string() ? method->as_string() : "common";
      const double scale = std::pow(10.0, static_cast<double>(precision));
      if (how == "ceil") return Value(std::ceil(v.number() * scale) / scale);
      if (how == "floor") return Value(std::floor(v.number() * scale) / scale);
      if (how != "common") throw std::invalid_argument("method must be common, ceil or floor");
      return Value(python_round(v.number(), precision));
    };
    m["safe"] = [](const Value& v, const Args&) { return v; };
    m["sort"] = [](const Value& v, const Args& a) {
      const bool reverse = flag(a.get("reverse", 0), false);
      const bool cs = flag(a.get("case_sensitive", 1), false);
      const Value* attribute = a.get("attribute", 2);
      List items = v.items();
      std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
        const Value kp = folded(attribute ? by_path(p, *attribute) : p, cs);
        const Value kq = folded(attribute ? by_path(q, *attribute) : q, cs);
        return reverse ? less_than(kq, kp) : less_than(kp, kq);
      });
      return Value(items);
    };
    m["string"] = [](const Value& v, const Args&) { return Value(v.str()); };
    m["sum"] = [](const Value& v, const Args& a) {
      const Value* attribute = a.get("attribute", 0);
      Value total = a.get("start", 1) ? *a.get("start", 1) : Value(int64_t{0});
      for (const Value& x : v.items()) {
        const Value y = attribute ? by_path(x, *attribute) : x;
        if (!y.is_number() || !total.is_number())
          throw std::invalid_argument(std::string("unsupported operand type(s) for +: '") +
                                      total.type_name() + "' and '" + y.type_name() + "'");
        if (total.is_float() || y.is_float())
          total = total.number() + y.number();
        else
          total = static_cast<int64_t>(total.number()) + static_cast<int64_t>(y.number());
      }
      return total;
    };
    m["title"] = [](const Value& v, const Args&) {
      // Jinja's title: each word (after whitespace, '-', brackets) capitalised.
      std::string s = v.str();
      bool start = true;
      for (char& c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80) c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
        start = std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
      }
      return Value(s);
    };
    m["tojson"] = [](const Value& v, const Args& a) {
      JsonDumpOptions o;
      if (const Value* ea = a.get("ensure_ascii")) o.ensure_ascii = ea->truthy();
      if (const Value* ind = a.get("indent", 0); ind && !ind->is_none()) {
        o.has_indent = true;
        if (ind->is_string())
          o.indent_text = ind->as_string();
        else
          o.indent = static_cast<int>(ind->as_int());
      }
      if (const Value* sep = a.get("separators");
          sep && sep->is_list() && sep->as_list().size() == 2) {
        o.has_item_separator = true;
        o.item_separator = sep->as_list()[0].str();
        o.key_separator = sep->as_list()[1].str();
      }
      if (const Value* sk = a.get("sort_keys")) o.sort_keys = sk->truthy();
      return Value(json_dump(v, o));
    };
    m["trim"] = [](const Value& v, const Args& a) {
      return Value(strip(v.str(), a.get("chars", 0), true, true));
    };
    m["unique"] = [](const Value& v, const Args& a) {
      const bool cs = flag(a.get("case_sensitive", 0), false);
      const Value* attribute = a.get("attribute", 1);
      List out, seen;
      for (const Value& x : v.items()) {
        const Value k = folded(attribute ? by_path(x, *attribute) : x, cs);
        if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
        seen.push_back(k);
        out.push_back(x);
      }
      return Value(out);
    };
    m["wordcount"] = [](const Value& v, const Args&) {
      int64_t n = 0;
      bool in_word = false;
      for (char c : v.str()) {
        const auto u = static_cast<unsigned char>(c);
        const bool w = u >= 0x80 || std::isalnum(u) || c == '_';
        n += w && !in_word;
        in_word = w;
      }
      return Value(n);
    };
    return m;
  }();
  return f;
}

} // namespace

bool has_filter(std::string_view name) {
  return filters().count(name) > 0;
}

Value apply_filter(std::string_view name, const Value& input, const Args& args) {
  auto it = filters().find(name);
  if (it == filters().end())
    throw std::invalid_argument("no filter named '" + std::string(name) + "'");
  return it->second(input, args);
}

} // namespace mt::jinja
